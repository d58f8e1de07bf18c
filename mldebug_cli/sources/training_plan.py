"""What a training config implies for the data checks: tokenizer, template, datasets, masking, max length.

Each value keeps the config key it came from, so findings can point at the line that caused them.
The framework profiles (``mldebug_cli.frameworks``) read their own keys and defaults into a
TrainingPlan; this module holds the plan and the path rules every profile shares.
"""

from __future__ import annotations

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
    own: bool = False  # a file mldebug picked for the framework (axolotl's named template), not a path the config names
    label: str | None = None  # what the header calls an ``own`` file (its name, not mldebug's private copy's path)


@dataclass(frozen=True)
class DatasetPlan:
    spec: str  # a path (resolved) or a hub id
    key: str  # the config key naming it
    data_format: str | None = None  # mldebug's row format, when the config says it
    split: str | None = None
    # axolotl chat_template masking settings the config sets, by option name (AxolotlOptions fields)
    masking: tuple[tuple[str, Setting], ...] = ()
    name: str | None = None  # the name the config calls it by, when not its path (LLaMA-Factory's dataset_info names)


@dataclass(frozen=True)
class TrainingPlan:
    framework: str
    tokenizer: Setting
    chat_template: Setting  # a .jinja path, or None for the tokenizer's own template
    datasets: tuple[DatasetPlan, ...]
    train_on: Setting
    max_length: Setting
    notes: tuple[str, ...] = ()  # assumptions mldebug had to make, said in the report
    framework_options: Any = None  # the framework's own row settings (LLaMA-Factory: LlamaFactoryOptions)
    eval_datasets: tuple[DatasetPlan, ...] = ()  # the eval sets the config names, each compared with the training rows
    eval_not_compared: tuple[str, ...] = ()  # eval sets the framework splits off itself, and why they are not compared


def finished(config: ConfigFile, plan: TrainingPlan, allow_outside: bool) -> TrainingPlan:
    """A profile's plan with its tokenizer path resolved and every named file checked (see checked_paths)."""
    if isinstance(plan.tokenizer.value, str):
        plan = replace(plan, tokenizer=Setting(local(config, plan.tokenizer.value), plan.tokenizer.key))
    return checked_paths(config, plan, allow_outside)


def template_setting(config: ConfigFile, key: str) -> Setting:
    value = config.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{at(config, key)}: {key} must name a template file")
    if "{%" in value or "{{" in value:  # an inline template: preflight needs a file to hand to the renderer
        raise InputError(f"{at(config, key)}: an inline template; save it to a .jinja file and point {key} at it")
    return Setting(str(resolve(config, value)), key)


def local(config: ConfigFile, spec: str, data_files: Any = None) -> str:
    """A path relative to the working directory or the config's folder when it exists; else kept (a hub id)."""
    if isinstance(data_files, str):
        spec = data_files
    candidate = resolve(config, spec)
    return str(candidate) if candidate.exists() else spec


def resolve(config: ConfigFile, value: str) -> Path:
    path = Path(value).expanduser()
    if path.is_absolute() or path.exists():
        return path
    beside = Path(os.path.normpath(Path(config.path).parent / path))
    return beside if beside.exists() else path


def resolve_dir(config: ConfigFile, value: str) -> Path:
    path = resolve(config, value)
    if not path.is_dir():
        raise InputError(f"{at(config, 'dataset_dir')}: dataset_dir {value!r} is not a folder")
    return path


def checked_paths(config: ConfigFile, plan: TrainingPlan, allow_outside: bool) -> TrainingPlan:
    """Refuse files outside the working directory and the config's folder unless allowed (a CI config is input too)."""
    if allow_outside:
        return plan
    roots = [Path.cwd().resolve(), Path(config.path).resolve().parent]
    template = [] if plan.chat_template.own else [(plan.chat_template.value, plan.chat_template.key)]
    named = [(d.spec, d.key) for d in (*plan.datasets, *plan.eval_datasets)] + template + [(plan.tokenizer.value, plan.tokenizer.key)]
    for value, key in named:
        if not value or not Path(str(value)).exists():
            continue
        resolved = Path(str(value)).resolve()
        if not any(resolved == root or root in resolved.parents for root in roots):
            raise InputError(
                f"{at(config, key)}: {key} points outside the working directory and the config's folder ({resolved})",
                hint="pass --allow-outside-paths to read it",
            )
    return plan


def set_key(config: ConfigFile, key: str) -> str | None:
    return key if config.has(key) else None


def at(config: ConfigFile, key: str | None) -> str:
    line = config.line(key)
    return f"{config.path}:{line}" if line else config.path
