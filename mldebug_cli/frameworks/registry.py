"""The training frameworks, one line each: the only place that lists them (sqlfluff's dialect registry).

Each line names a module of this package that exports one ``FRAMEWORK`` (a :class:`Framework`): everything mldebug
knows about the framework (how its configs are recognised and read, its key schema, how it turns rows into ids and
labels, how it counts steps). A line also carries the few facts the command line needs before any framework module
is imported (``mldebug --help`` imports none of them): its package, and whether a ``--<package>-version`` flag and
an ``mldebug.toml [versions]`` key name it. Every table of frameworks is generated from here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import UsageError

if TYPE_CHECKING:  # (the framework modules, versions and schema import this module: their types are named in words)
    from mldebug_cli.schedule.model import RunSpec
    from mldebug_cli.sources.config_file import ConfigFile
    from mldebug_cli.sources.training_plan import DatasetPlan, TrainingPlan


@dataclass(frozen=True)
class Entry:
    """One registry line."""

    name: str  # the --framework value, and how reports name it
    module: str  # mldebug_cli.frameworks.<module> exports FRAMEWORK
    package: str | None = None  # its PyPI distribution (None: not versioned)
    version_flag: bool = False  # the package's version can be given (--<package>-version, mldebug.toml [versions])
    label: str = ""  # how help text names it (default: its name)


REGISTRY = (
    Entry("transformers", "hf", "transformers", version_flag=True),
    Entry("trl", "trl", "trl", version_flag=True, label="TRL"),
    Entry("axolotl", "axolotl", "axolotl", version_flag=True),
    Entry("llama-factory", "llama_factory", "llamafactory", version_flag=True, label="LLaMA-Factory"),
    Entry("torchtune", "torchtune", "torchtune"),
    Entry("unsloth", "unsloth", label="Unsloth"),
)
DEFAULT_ROWS = "trl"  # whose tokenization inspect-data emulates when no framework is named

NAMES = tuple(entry.name for entry in REGISTRY)
VERSION_PACKAGES = tuple(entry.package for entry in REGISTRY if entry.version_flag)  # the --<package>-version flags
VERSION_LABELS = {entry.package: entry.label or entry.name for entry in REGISTRY if entry.version_flag}
DISTRIBUTIONS = {entry.name: entry.package for entry in REGISTRY if entry.package}  # framework name -> distribution


@dataclass(frozen=True)
class Detection:
    """How a config says it is for this framework: at least ``at_least`` of ``keys`` at its top level, or a value
    that is a mapping holding ``component_key`` (torchtune's ``_component_``). Lower ``rank`` is asked first."""

    rank: int
    keys: frozenset[str] = frozenset()
    at_least: int = 1
    component_key: str | None = None

    def matches(self, data: Mapping[str, Any]) -> bool:
        if self.component_key is not None:
            return any(isinstance(v, Mapping) and self.component_key in v for v in data.values())
        return len(set(data) & self.keys) >= self.at_least


@dataclass(frozen=True)
class Framework:
    """What one training framework does, as plain callables and facts; a part it lacks is None."""

    name: str
    versioned: tuple[str, ...] = ()  # the packages whose versions decide its semantics (its own, the transformers it runs on)
    detection: Detection | None = None  # None: never detected from a config (chosen with --framework only)
    fallback: bool = False  # the framework a config is for when no other one's keys are there
    # (config, framework name, world size, versions.TargetVersions, task) -> RunSpec: the schedule settings
    read_spec: Callable[[ConfigFile, str, int, Any, str | None], RunSpec] | None = None
    # (config, versions.TargetVersions, task) -> schema.KeySchema: the keys it reads from its config at those versions
    key_schema: Callable[[ConfigFile, Any, str | None], Any] | None = None
    read_plan: Callable[[ConfigFile], TrainingPlan] | None = None  # what its config implies for the data checks
    # (config, task, versions.TargetVersions) -> preference_config.PreferenceConfig | None: its preference trainer
    read_preference: Callable[[ConfigFile, str | None, Any], Any] | None = None
    # (plan, dataset, --train-on or None) -> its row options for one of the config's datasets (None: the plan's)
    dataset_options: Callable[[TrainingPlan, DatasetPlan, str | None], Any] | None = None
    rows: type | None = None  # its frameworks.rows.RowProfile class (class attributes say what it does)
    row_profile: Callable[[Any, Any, str], Any] | None = None  # (inspect options, tokenizer, row format) -> RowProfile
    encodes_pairs: bool = False  # its row profile may prepare preference rows itself (RowProfile.encode_pair)
    end_of_turn_keys: tuple[str, ...] = ()  # a dataset's masking settings that decide which end-of-turn tokens train
    # (config, framework name, world size) -> trainer_facts.TrainerFacts: what its config makes the trainer do
    trainer_facts: Callable[[ConfigFile, str, int], Any] | None = None


def entry(name: str) -> Entry | None:
    return next((e for e in REGISTRY if e.name == name), None)


def framework(name: str) -> Framework:
    """The FRAMEWORK object of ``name`` (its module is imported on first use)."""
    found = entry(name)
    if found is None:
        raise UsageError(f"--framework: unknown framework {name!r}", hint=f"one of {', '.join(NAMES)}")
    return importlib.import_module(f"mldebug_cli.frameworks.{found.module}").FRAMEWORK


def borrowed(name: str, part: str) -> Callable[..., Any]:
    """``name``'s ``part``, looked up when called: a framework that does something exactly as another one does."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(framework(name), part)(*args, **kwargs)

    return call


def lazily(module: str, name: str) -> Callable[..., Any]:
    """``module``'s ``name``, imported when called (a part whose module imports the framework modules itself)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    return call


def frameworks() -> tuple[Framework, ...]:
    return tuple(framework(name) for name in NAMES)


def names_with(part: str) -> tuple[str, ...]:
    """The frameworks that supply ``part`` (a Framework field), in registry order."""
    return tuple(f.name for f in frameworks() if getattr(f, part))
