"""What a TRL config (or a bare TrainingArguments file, read as TRL's SFT script reads it) says about its data: its
datasets, template, masking and max_length (``read_plan``), and the preference trainer it is for
(``read_preference``). Apart from the rest of TRL's folder so that transformers' framework reads plans with the
same functions without importing TRL's (which builds on transformers')."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mldebug_cli.frameworks import versions
from mldebug_cli.frameworks.preference_config import (
    EMULATED_TRL,
    TRL_CLASSES,
    TRL_REWARD_COLUMNS,
    PreferenceConfig,
    positive_length,
    trl_config_class,
)
from mldebug_cli.frameworks.trl.config_classes import trl_keys
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, Setting, TrainingPlan, local, set_key, template_setting

DEFAULT_MAX_LENGTH = 1024


@dataclass(frozen=True)
class TrlOptions:
    """SFTConfig's data settings that --train-on, --max-length and --truncation-mode do not carry (read from a TRL
    config by ``read_plan``)."""

    completion_only_loss: bool | None = None  # None: on for prompt/completion rows
    packing: bool = False
    packing_strategy: str = "bfd"
    padding_free: bool = False
    no_max_length: bool = False  # max_length: null: rows are not cut (and none is dropped for it)


# --- preference trainers: which config class, and the settings its data preparation reads -----------------

def read_preference(config: ConfigFile, task: str | None, targets: versions.TargetVersions) -> PreferenceConfig | None:
    """The TRL config class a file is for, when it is DPOConfig, KTOConfig, ORPOConfig or GRPOConfig."""
    own, _ = trl_keys(targets)
    name = trl_config_class(config.data, own, task)
    chosen = TRL_CLASSES[name]
    if chosen is None:
        return None
    decided_by = "--task" if task else _deciding_key(config, own, name)
    notes, not_emulated = [], []
    target = targets.get("trl")
    if target.version and target.version != EMULATED_TRL:
        not_emulated.append(f"the run uses {target.describe()}; mldebug prepares the rows as TRL {EMULATED_TRL} "
                            "does (older TRL cut prompts to max_prompt_length and added BOS/EOS ids in DPO)")
    length_key = "max_length" if config.has("max_length") else None
    if chosen == "grpo":
        max_length = Setting(None, None)
        if config.has("max_prompt_length"):
            notes.append("GRPOConfig in TRL 1.16 has no max_prompt_length: prompts are not cut")
    else:
        value = config.get("max_length") if length_key else DEFAULT_MAX_LENGTH
        max_length = Setting(positive_length(config, length_key, value), length_key)
    mode_key = "truncation_mode" if chosen == "dpo" and config.has("truncation_mode") else None
    mode = Setting(str(config.get("truncation_mode")) if mode_key else None, mode_key)
    rewards = _reward_columns(config, notes) if chosen == "grpo" else Setting((), None)
    return PreferenceConfig(chosen, f"TRL {name}", decided_by, max_length, mode, rewards, tuple(not_emulated),
                            tuple(notes))


def _deciding_key(config: ConfigFile, own: Mapping[str, Mapping[str, Any]], name: str) -> str:
    others = set().union(*(own[o] for o in TRL_CLASSES if o != name))
    keys = [k for k in config.data if k in own[name]]
    return next((k for k in keys if k not in others), next((k for k in keys if k not in own["SFTConfig"]), keys[0]))


def _reward_columns(config: ConfigFile, notes: list[str]) -> Setting:
    names = config.get("reward_funcs")
    if not names:
        return Setting((), None)
    if not isinstance(names, list):
        names = [names]
    columns: list[str] = []
    for name in map(str, names):
        if name in TRL_REWARD_COLUMNS:
            columns += [c for c in TRL_REWARD_COLUMNS[name] if c not in columns]
        else:
            notes.append(f"reward function {name!r}: mldebug cannot tell which columns it reads (pass --reward-columns)")
    return Setting(tuple(columns), "reward_funcs")



def read_plan(config: ConfigFile) -> TrainingPlan:
    """Dataset, template, masking and max_length (default 1024) of a TRL/TrainingArguments config."""
    datasets = []
    if config.has("dataset_name"):
        datasets.append(DatasetPlan(local(config, str(config.get("dataset_name"))), "dataset_name", None,
                                    config.get("dataset_train_split", "train")))
    for i, entry in enumerate(config.get("datasets") or []):
        if isinstance(entry, dict) and entry.get("path"):
            datasets.append(DatasetPlan(local(config, str(entry["path"])), f"datasets.{i}.path", None, entry.get("split")))
    tokenizer_key = next((k for k in ("tokenizer_name_or_path", "model_name_or_path") if config.has(k)), "model_name_or_path")
    if config.get("assistant_only_loss") is True:
        train_on = Setting("assistant", "assistant_only_loss")
    else:
        train_on = Setting(None, set_key(config, "assistant_only_loss"))  # the framework's default (completion-aware)
    length_key = next((k for k in ("max_length", "max_seq_length") if config.has(k)), None)
    max_length = Setting(int(config.get(length_key)) if length_key and config.get(length_key) else DEFAULT_MAX_LENGTH, length_key)
    chat_template = template_setting(config, "chat_template_path") if config.has("chat_template_path") else Setting(None)
    framework = "trl" if config.has("dataset_name") or config.has("datasets") or config.has("assistant_only_loss") else "transformers"
    return TrainingPlan(framework, Setting(config.get(tokenizer_key), tokenizer_key), chat_template, tuple(datasets), train_on,
                        max_length, framework_options=trl_options(config, length_key), **_eval_sets(config))


def _eval_sets(config: ConfigFile) -> dict[str, Any]:
    """TRL's scripts evaluate (``eval_strategy`` not ``no``) on ``dataset_name``'s ``dataset_test_split`` ("test"), or,
    with a ``datasets`` mixture, on its ``test_split_size`` share, which ``train_test_split`` draws without a seed."""
    strategy = config.get("eval_strategy", config.get("evaluation_strategy", "no"))
    if str(strategy) == "no":
        return {}
    if config.get("datasets"):
        size = config.get("test_split_size")
        if size is None:
            return {}
        return {"eval_not_compared": (f"test_split_size: {size}: TRL's get_dataset splits the mixture with "
                                      "train_test_split and no seed, a new split each run: not comparable before it",)}
    if not config.has("dataset_name"):
        return {}
    split = str(config.get("dataset_test_split", "test"))
    key = "dataset_test_split" if config.has("dataset_test_split") else "dataset_name"
    return {"eval_datasets": (DatasetPlan(local(config, str(config.get("dataset_name"))), key, None, split),)}


def trl_options(config: ConfigFile, length_key: str | None) -> TrlOptions:
    """The SFTConfig data settings of a config: completion_only_loss, packing, packing_strategy, padding_free and a
    ``max_length: null``."""
    completion = config.get("completion_only_loss") if config.has("completion_only_loss") else None
    return TrlOptions(completion_only_loss=completion if isinstance(completion, bool) else None,
                      packing=config.get("packing") is True, packing_strategy=str(config.get("packing_strategy") or "bfd"),
                      padding_free=config.get("padding_free") is True,
                      no_max_length=length_key is not None and config.get(length_key) is None)
