"""What a training config implies for the data checks: tokenizer, template, datasets, masking, max length.

Each value keeps the config key it came from, so findings can point at the line that caused them.
Defaults follow each framework (axolotl: sequence_len 2048, assistant turns; LLaMA-Factory:
cutoff_len 2048, train_on_prompt false; TRL: max_length 1024, assistant_only_loss false).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.config_file import ConfigFile


@dataclass(frozen=True)
class Setting:
    """A value and the config key that set it (None when it is the framework's default)."""

    value: Any
    key: str | None = None


@dataclass(frozen=True)
class DatasetPlan:
    spec: str  # a path (resolved) or a hub id
    key: str  # the config key naming it
    data_format: str | None = None  # mldebug's row format, when the config says it
    split: str | None = None
    # axolotl chat_template masking settings the config sets, by option name (AxolotlOptions fields)
    masking: tuple[tuple[str, Setting], ...] = ()


@dataclass(frozen=True)
class TrainingPlan:
    framework: str
    tokenizer: Setting
    chat_template: Setting  # a .jinja path, or None for the tokenizer's own template
    datasets: tuple[DatasetPlan, ...]
    train_on: Setting
    max_length: Setting
    notes: tuple[str, ...] = ()  # assumptions mldebug had to make, said in the report


_AXOLOTL_TYPES = {"alpaca": "alpaca", "sharegpt": "sharegpt", "chat_template": None, "completion": "text"}
_AXOLOTL_TERMINATORS = ("all", "turn", "last", "none")
_LLAMA_FACTORY_FORMATS = {"alpaca": "alpaca", "sharegpt": "sharegpt"}


def read_plan(config: ConfigFile, framework: str, allow_outside: bool = False) -> TrainingPlan:
    readers = {"axolotl": _axolotl, "llama-factory": _llama_factory, "trl": _trl, "transformers": _trl}
    if framework not in readers:
        raise InputError(f"{config.path}: preflight's data checks support axolotl, LLaMA-Factory and TRL/HF configs, not {framework}")
    plan = readers[framework](config)
    if isinstance(plan.tokenizer.value, str):
        plan = replace(plan, tokenizer=Setting(_local(config, plan.tokenizer.value), plan.tokenizer.key))
    return _checked_paths(config, plan, allow_outside)


def _axolotl(config: ConfigFile) -> TrainingPlan:
    tokenizer_key = "tokenizer_config" if config.has("tokenizer_config") else "base_model"
    datasets, notes = [], []
    for i, entry in enumerate(config.get("datasets") or []):
        if not isinstance(entry, dict) or not entry.get("path"):
            raise InputError(f"{_at(config, f'datasets.{i}')}: datasets[{i}] has no path")
        kind = entry.get("type", "chat_template")
        kind = kind if isinstance(kind, str) else "chat_template"
        fmt = _AXOLOTL_TYPES.get(kind.split(".")[0])
        if fmt is None and kind.split(".")[0] not in _AXOLOTL_TYPES:
            notes.append(f"datasets[{i}] type {kind!r}: format detected from the rows")
        if kind == "alpaca":
            notes.append(f"datasets[{i}] type alpaca: axolotl formats it with its own Alpaca prompter; mldebug renders it with the chat template")
        path = _local(config, str(entry["path"]), entry.get("data_files"))
        masking = _axolotl_masking(config, f"datasets.{i}")
        datasets.append(DatasetPlan(path, f"datasets.{i}.path", fmt, entry.get("split"), masking))
    template = config.get("chat_template")
    chat_template = Setting(None)
    if template == "jinja":
        chat_template = _template_setting(config, "chat_template_jinja")
    elif isinstance(template, str) and template != "tokenizer_default":
        notes.append(f"chat_template {template!r} is one of axolotl's built-in templates; mldebug used the tokenizer's own")
    train_on = Setting("all", "train_on_inputs") if config.get("train_on_inputs") is True else Setting("assistant", _key(config, "train_on_inputs"))
    max_length = Setting(int(config.get("sequence_len", 2048)), _key(config, "sequence_len"))
    if config.get("excess_length_strategy", "drop") == "drop":
        notes.append("axolotl drops rows longer than sequence_len (excess_length_strategy: drop): rows flagged as truncated are dropped from training")
    return TrainingPlan("axolotl", Setting(config.get(tokenizer_key), tokenizer_key), chat_template, tuple(datasets), train_on, max_length, tuple(notes))


def _axolotl_masking(config: ConfigFile, at: str) -> tuple[tuple[str, Setting], ...]:
    """The chat_template masking keys set for one dataset entry (and the top-level ones), checked as axolotl checks them."""
    found = []
    keyed = [(name, f"{at}.{name}") for name in ("roles_to_train", "train_on_eos", "train_on_eot", "message_field_training")]
    keyed += [(name, name) for name in ("train_on_inputs", "eot_tokens")]
    for name, key in keyed:
        value = config.get(key)
        if value is None:  # axolotl drops unset (null) keys and applies its defaults
            continue
        if name in ("roles_to_train", "eot_tokens"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(f"{_at(config, key)}: {name} must be a list of strings")
            value = tuple(value)
        elif name in ("train_on_eos", "train_on_eot") and value not in _AXOLOTL_TERMINATORS:
            raise InputError(f"{_at(config, key)}: {name} must be one of {', '.join(_AXOLOTL_TERMINATORS)}, not {value!r}")
        elif name == "train_on_inputs" and not isinstance(value, bool):
            raise InputError(f"{_at(config, key)}: train_on_inputs must be true or false")
        elif name == "message_field_training" and not isinstance(value, str):
            raise InputError(f"{_at(config, key)}: message_field_training must name a message key")
        found.append((name, Setting(value, key)))
    return tuple(found)


def _llama_factory(config: ConfigFile) -> TrainingPlan:
    names = config.get("dataset")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise InputError(f"{config.path}: no dataset key: LLaMA-Factory configs name their datasets in `dataset`")
    dataset_dir = str(config.get("dataset_dir", "data"))
    folder = _resolve_dir(config, dataset_dir)
    info_path = folder / "dataset_info.json"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{_at(config, 'dataset')}: {info_path} not found (dataset_dir is {dataset_dir!r})") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{info_path}: not readable JSON ({exc})") from None
    datasets = []
    for name in names:
        entry = info.get(name)
        if not isinstance(entry, dict):
            raise InputError(f"{_at(config, 'dataset')}: dataset {name!r} is not in {info_path}")
        if entry.get("file_name"):
            spec = str(folder / entry["file_name"])
        else:
            spec = entry.get("hf_hub_url") or entry.get("ms_hub_url") or entry.get("script_url") or name
        fmt = _LLAMA_FACTORY_FORMATS.get(entry.get("formatting", "alpaca"))
        datasets.append(DatasetPlan(spec, "dataset", fmt, entry.get("split")))
    if config.get("train_on_prompt") is True:
        train_on = Setting("all", "train_on_prompt")
    elif config.get("mask_history") is True:
        train_on = Setting("last", "mask_history")
    else:
        train_on = Setting("assistant", _key(config, "train_on_prompt"))
    notes = []
    if config.has("template"):
        notes.append(f"template {config.get('template')!r} is LLaMA-Factory's own; mldebug renders with the tokenizer's chat template")
    max_length = Setting(int(config.get("cutoff_len", 2048)), _key(config, "cutoff_len"))
    return TrainingPlan("llama-factory", Setting(config.get("model_name_or_path"), "model_name_or_path"), Setting(None),
                        tuple(datasets), train_on, max_length, tuple(notes))


def _trl(config: ConfigFile) -> TrainingPlan:
    datasets = []
    if config.has("dataset_name"):
        datasets.append(DatasetPlan(_local(config, str(config.get("dataset_name"))), "dataset_name", None,
                                    config.get("dataset_train_split", "train")))
    for i, entry in enumerate(config.get("datasets") or []):
        if isinstance(entry, dict) and entry.get("path"):
            datasets.append(DatasetPlan(_local(config, str(entry["path"])), f"datasets.{i}.path", None, entry.get("split")))
    tokenizer_key = next((k for k in ("tokenizer_name_or_path", "model_name_or_path") if config.has(k)), "model_name_or_path")
    if config.get("assistant_only_loss") is True:
        train_on = Setting("assistant", "assistant_only_loss")
    else:
        train_on = Setting(None, _key(config, "assistant_only_loss"))  # the framework's default (completion-aware)
    length_key = next((k for k in ("max_length", "max_seq_length") if config.has(k)), None)
    max_length = Setting(int(config.get(length_key)) if length_key and config.get(length_key) else 1024, length_key)
    chat_template = _template_setting(config, "chat_template_path") if config.has("chat_template_path") else Setting(None)
    framework = "trl" if config.has("dataset_name") or config.has("datasets") or config.has("assistant_only_loss") else "transformers"
    return TrainingPlan(framework, Setting(config.get(tokenizer_key), tokenizer_key), chat_template, tuple(datasets), train_on, max_length)


def _template_setting(config: ConfigFile, key: str) -> Setting:
    value = config.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{_at(config, key)}: {key} must name a template file")
    if "{%" in value or "{{" in value:  # an inline template: preflight needs a file to hand to the renderer
        raise InputError(f"{_at(config, key)}: an inline template; save it to a .jinja file and point {key} at it")
    return Setting(str(_resolve(config, value)), key)


def _local(config: ConfigFile, spec: str, data_files: Any = None) -> str:
    """A path relative to the working directory or the config's folder when it exists; else kept (a hub id)."""
    if isinstance(data_files, str):
        spec = data_files
    candidate = _resolve(config, spec)
    return str(candidate) if candidate.exists() else spec


def _resolve(config: ConfigFile, value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_absolute() or path.exists():
        return path
    beside = Path(os.path.normpath(Path(config.path).parent / path))
    return beside if beside.exists() else path


def _resolve_dir(config: ConfigFile, value: str) -> Path:
    path = _resolve(config, value)
    if not path.is_dir():
        raise InputError(f"{_at(config, 'dataset_dir')}: dataset_dir {value!r} is not a folder")
    return path


def _checked_paths(config: ConfigFile, plan: TrainingPlan, allow_outside: bool) -> TrainingPlan:
    """Refuse files outside the working directory and the config's folder unless allowed (a CI config is input too)."""
    if allow_outside:
        return plan
    roots = [Path.cwd().resolve(), Path(config.path).resolve().parent]
    named = [(d.spec, d.key) for d in plan.datasets] + [(plan.chat_template.value, plan.chat_template.key),
                                                       (plan.tokenizer.value, plan.tokenizer.key)]
    for value, key in named:
        if not value or not Path(str(value)).exists():
            continue
        resolved = Path(str(value)).resolve()
        if not any(resolved == root or root in resolved.parents for root in roots):
            raise InputError(
                f"{_at(config, key)}: {key} points outside the working directory and the config's folder ({resolved})",
                hint="pass --allow-outside-paths to read it",
            )
    return plan


def _key(config: ConfigFile, key: str) -> str | None:
    return key if config.has(key) else None


def _at(config: ConfigFile, key: str | None) -> str:
    line = config.line(key)
    return f"{config.path}:{line}" if line else config.path
