"""One profile per training framework: the config keys it reads (with types and defaults), key
aliases and renames, and the semantics that change between its versions.

Modules: ``hf`` (transformers Trainer / TrainingArguments), ``trl``, ``axolotl``, ``llama_factory``,
``torchtune``; ``schema`` (key lists and types), ``versions`` (target versions and where they came
from), ``common`` (typed key reading). This floor sits with ``sources`` and ``render``: below checks
and pipelines. Here: which framework a config is for, its schedule settings as one RunSpec, and the
schema its keys are validated against.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.frameworks import versions
from mldebug_cli.frameworks.schema import KeySchema
from mldebug_cli.schedule.model import FRAMEWORKS, RunSpec
from mldebug_cli.sources.config_file import ConfigFile

_TRL_KEYS = frozenset(
    {"packing", "packing_strategy", "padding_free", "max_seq_length", "dataset_text_field", "completion_only_loss",
     "assistant_only_loss", "dataset_kwargs", "model_init_kwargs", "eval_packing", "chat_template_path",
     # DPOConfig, KTOConfig, ORPOConfig, GRPOConfig and the `trl grpo` script
     "beta", "loss_type", "truncation_mode", "desirable_weight", "undesirable_weight", "num_generations",
     "generation_batch_size", "steps_per_generation", "num_iterations", "reward_funcs", "max_completion_length"}
)
_AXOLOTL_KEYS = frozenset({"base_model", "micro_batch_size", "num_epochs", "sample_packing", "lr_scheduler",
                           "sequence_len", "val_set_size"})
_LLAMA_FACTORY_KEYS = frozenset({"finetuning_type", "cutoff_len", "template", "stage", "val_size", "neat_packing"})


def detect_framework(config: ConfigFile) -> str:
    """The framework whose keys the config uses; plain TrainingArguments when nothing else fits."""
    data: Mapping[str, Any] = config.data
    if any(isinstance(v, Mapping) and "_component_" in v for v in data.values()):
        return "torchtune"
    keys = set(data)
    if len(keys & _AXOLOTL_KEYS) >= 2:
        return "axolotl"
    if len(keys & _LLAMA_FACTORY_KEYS) >= 2:
        return "llama-factory"
    if keys & (_TRL_KEYS | _trl_own_keys()):
        return "trl"
    return "transformers"


def _trl_own_keys() -> frozenset[str]:
    """The fields of TRL's config classes (stored list of trl 1.16) that TrainingArguments does not have (stored
    list of transformers 4.57): ``max_length``, ``beta``, ``num_generations``, ... A file with one is for TRL."""
    from mldebug_cli.frameworks import schema

    trl, hf = schema.stored("trl-1.16.0.json"), schema.stored("transformers-4.57.6.json")
    own = set().union(*(fields for name, fields in trl["schemas"].items() if name.endswith("Config")))
    return frozenset(own - set(hf["schemas"]["config"]))


def read_spec(config: ConfigFile, framework: str | None, world_size: int,
              targets: versions.TargetVersions | None = None, task: str | None = None) -> RunSpec:
    """``task``: the preference trainer (dpo, kto, orpo, grpo) when the caller knows it; TRL configs say it by
    their keys otherwise."""
    from mldebug_cli.frameworks import axolotl, hf, torchtune

    framework = checked_framework(framework or detect_framework(config))
    if world_size < 1:
        raise UsageError(f"--world-size must be at least 1, got {world_size}")
    targets = targets or versions.resolve(config.path)
    if framework == "torchtune":
        return torchtune.read_spec(config, world_size, targets)
    if framework == "axolotl":
        return axolotl.read_spec(config, world_size, targets)
    if framework == "trl" and task is None:
        from mldebug_cli.frameworks.preference_config import TRL_CLASSES, trl_config_class
        from mldebug_cli.frameworks.trl import trl_keys

        task = TRL_CLASSES[trl_config_class(config.data, trl_keys(targets)[0])]
    return hf.read_spec(config, framework, world_size, targets, task)


def checked_framework(framework: str) -> str:
    if framework not in FRAMEWORKS:
        raise UsageError(f"--framework: unknown framework {framework!r}", hint=f"choose one of {', '.join(FRAMEWORKS)}")
    return framework


# the packages whose versions decide a framework's semantics (its own, and the transformers it runs on)
VERSIONED_PACKAGES = {
    "transformers": ("transformers",),
    "trl": ("trl", "transformers"),
    "axolotl": ("axolotl", "transformers"),
    "llama-factory": ("llamafactory", "transformers"),
    "torchtune": (),
}


def key_schema(config: ConfigFile, framework: str, targets: versions.TargetVersions,
               task: str | None = None) -> KeySchema | None:
    """The keys ``framework`` reads from its config file at the target versions (None: not modelled);
    ``task`` names TRL's config class (dpo: DPOConfig, ...) when the keys should not decide."""
    from mldebug_cli.frameworks import axolotl, hf, llama_factory, trl

    if framework == "axolotl":
        return axolotl.key_schema(config, targets)
    if framework == "llama-factory":
        return llama_factory.key_schema(config, targets)
    if framework == "trl":
        return trl.key_schema(config, targets, task)
    if framework == "transformers":
        return hf.training_arguments_schema(targets)
    return None


ROW_PROFILES = {"transformers": "hf", "trl": "trl", "axolotl": "axolotl", "llama-factory": "llama_factory",
                "unsloth": "unsloth"}


def profile_class(framework: str):
    """The RowProfile class of ``framework`` (its class attributes say what it does without a tokenizer)."""
    import importlib

    return importlib.import_module(f"mldebug_cli.frameworks.{ROW_PROFILES[framework]}").Rows


def row_profile(framework: str, options: Any, loaded: Any, row_format: str):
    """How ``framework`` turns rows into ids and labels (a frameworks.rows.RowProfile), for these inspect
    options (their ``framework_options``), tokenizer and row format."""
    import importlib

    return importlib.import_module(f"mldebug_cli.frameworks.{ROW_PROFILES[framework]}").row_profile(options, loaded, row_format)


# frameworks whose row profile may prepare preference rows itself (RowProfile.encodes_pairs)
PAIR_PROFILES = frozenset({"llama-factory"})


def pair_profile(framework: str, options: Any, loaded: Any, task: str):
    """The framework's row profile when its own pairwise processor prepares ``task``'s preference rows (its
    ``encode_pair``); None when they are prepared as TRL 1.16 does."""
    if framework not in PAIR_PROFILES:
        return None
    rows = row_profile(framework, options, loaded, "sharegpt")
    return rows if rows.encodes_pairs(task) else None


def read_plan(config: ConfigFile, framework: str, allow_outside: bool = False):
    """What the config implies for the data checks (a sources.training_plan.TrainingPlan), read by its profile."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.frameworks import axolotl, llama_factory, trl
    from mldebug_cli.sources.training_plan import finished

    readers = {"axolotl": axolotl.read_plan, "llama-factory": llama_factory.read_plan, "trl": trl.read_plan,
               "transformers": trl.read_plan, "unsloth": trl.read_plan}  # Unsloth runs TRL's SFTConfig
    if framework not in readers:
        raise InputError(f"{config.path}: preflight's data checks support axolotl, LLaMA-Factory and TRL/HF configs, not {framework}")
    return finished(config, readers[framework](config), allow_outside)
