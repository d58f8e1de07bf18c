"""Which framework a config is for, and its settings as one RunSpec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.schedule import versions
from mldebug_cli.schedule.model import FRAMEWORKS, RunSpec
from mldebug_cli.sources.config_file import ConfigFile

_TRL_KEYS = frozenset(
    {"packing", "packing_strategy", "padding_free", "max_seq_length", "dataset_text_field", "completion_only_loss",
     "assistant_only_loss", "dataset_kwargs", "model_init_kwargs", "eval_packing", "chat_template_path"}
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
    if keys & _TRL_KEYS:
        return "trl"
    return "transformers"


def read_spec(config: ConfigFile, framework: str | None, world_size: int) -> RunSpec:
    from mldebug_cli.schedule.frameworks import axolotl, hf, torchtune

    framework = framework or detect_framework(config)
    if framework not in FRAMEWORKS:
        raise UsageError(f"--framework: unknown framework {framework!r}", hint=f"choose one of {', '.join(FRAMEWORKS)}")
    if world_size < 1:
        raise UsageError(f"--world-size must be at least 1, got {world_size}")
    transformers_version = versions.installed("transformers")
    if framework == "torchtune":
        return torchtune.read_spec(config, world_size)
    if framework == "axolotl":
        return axolotl.read_spec(config, world_size, transformers_version)
    return hf.read_spec(config, framework, world_size, transformers_version)
