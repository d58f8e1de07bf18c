"""TRL's config classes: the keys each one has (from the installed package, else from the recorded wheel) and which
class a config file is for. Read by the framework's key schema and preference reader, and by its trainer facts
(which import this module, not the framework's)."""

from __future__ import annotations

import importlib

from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.preference_config import TRL_CLASSES, trl_config_class
from mldebug_cli.sources.config_file import ConfigFile

CONFIG_CLASSES = {
    "SFTConfig": "trl.trainer.sft_config",
    "DPOConfig": "trl.trainer.dpo_config",
    "GRPOConfig": "trl.trainer.grpo_config",
    "KTOConfig": "trl.trainer.kto_config",
    "ORPOConfig": "trl.experimental.orpo.orpo_config",
}
SCRIPT_CLASSES = {"ScriptArguments": "trl.scripts.utils", "DatasetMixtureConfig": "trl.scripts.utils",
                  "ModelConfig": "trl.trainer.model_config"}
GRPO_SCRIPT_CLASS = ("GRPOScriptArguments", "trl.scripts.grpo")  # `trl grpo` also parses reward_funcs


def trl_keys(targets: versions.TargetVersions) -> tuple[dict[str, dict[str, schema.KeyType]], str]:
    installed = versions.installed("trl")
    target = targets.get("trl")
    if installed and target.version in (None, installed):
        if _recorded_exactly(installed):
            # The installed release is one the record was read from (its wheel, tools/version_facts.py), with the
            # installed transformers' TrainingArguments: the same keys as importing them (held by
            # tests/frameworks/test_config_validation.py), without importing trl, transformers' trainer and torch.
            return recorded_keys(installed, versions.installed("transformers"))[0], f"trl {installed} (installed)"
        try:
            return _installed_keys(), f"trl {installed} (installed)"
        except ImportError:
            pass
    return recorded_keys(target.version, targets.version("transformers"))


def _recorded_exactly(trl_installed: str) -> bool:
    """Whether the installed trl and transformers are both releases the wheels' record holds (not stand-ins)."""
    transformers_installed = versions.installed("transformers")
    return (trl_installed in record.releases("trl") and transformers_installed is not None
            and transformers_installed in record.releases("transformers"))


def recorded_keys(version: str | None, transformers_version: str | None) -> tuple[dict[str, dict[str, schema.KeyType]], str]:
    """TRL's config classes (their fields beyond TrainingArguments') and the script's arguments, at the recorded
    release standing for ``version`` (tools/version_facts.py, from the wheels)."""
    release = record.release_for("trl", version)
    base = record.fields("transformers", "TrainingArguments", transformers_version)
    keys = {name: {k: v for k, v in schema.recorded_keys("trl", (name,), release).items() if k not in base}
            for name in CONFIG_CLASSES}
    keys["script"] = schema.recorded_keys("trl", tuple(SCRIPT_CLASSES), release)
    keys["grpo_script"] = schema.recorded_keys("trl", (GRPO_SCRIPT_CLASS[0],), release)
    wanted = "" if release == version else f", standing in for trl {version}" if version else ""
    return keys, f"trl {release} (recorded from its wheel{wanted})"


def _installed_keys() -> dict[str, dict[str, schema.KeyType]]:
    """Each installed TRL config class's fields beyond TrainingArguments', and the trl script's arguments."""
    import dataclasses
    import warnings

    from transformers import TrainingArguments

    base = {f.name for f in dataclasses.fields(TrainingArguments)}
    out = {}
    for name, module in CONFIG_CLASSES.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ORPOConfig lives in trl.experimental, which warns on import
            cls = getattr(importlib.import_module(module), name)
        out[name] = {k: v for k, v in schema.dataclass_keys([cls]).items() if k not in base}
    out["script"] = schema.dataclass_keys([getattr(importlib.import_module(m), n) for n, m in SCRIPT_CLASSES.items()])
    grpo_script = getattr(importlib.import_module(GRPO_SCRIPT_CLASS[1]), GRPO_SCRIPT_CLASS[0])
    out["grpo_script"] = schema.dataclass_keys([grpo_script])
    return out


def config_task(config: ConfigFile, targets: versions.TargetVersions, task: str | None = None) -> str:
    """The task of the TRL config class a file is for: dpo, kto, orpo, grpo, or sft (SFTConfig)."""
    own, _ = trl_keys(targets)
    return TRL_CLASSES[trl_config_class(config.data, own, task)] or "sft"
