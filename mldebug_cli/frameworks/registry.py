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

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import KeySchema
    from mldebug_cli.frameworks.versions import TargetVersions
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
    # (config, framework name, world size, targets, task) -> RunSpec: the schedule settings after its defaults
    read_spec: Callable[[ConfigFile, str, int, TargetVersions, str | None], RunSpec] | None = None
    # (config, targets, task) -> KeySchema: the keys it reads from its config at the target versions
    key_schema: Callable[[ConfigFile, TargetVersions, str | None], KeySchema] | None = None
    read_plan: Callable[[ConfigFile], TrainingPlan] | None = None  # what its config implies for the data checks
    # (config, task, targets) -> PreferenceConfig | None: the preference trainer a config is for
    read_preference: Callable[[ConfigFile, str | None, TargetVersions], Any] | None = None
    # (plan, dataset, --train-on or None) -> its row options for one of the config's datasets (None: the plan's)
    dataset_options: Callable[[TrainingPlan, DatasetPlan, str | None], Any] | None = None
    rows: type | None = None  # its frameworks.rows.RowProfile class (class attributes say what it does)
    row_profile: Callable[[Any, Any, str], Any] | None = None  # (inspect options, tokenizer, row format) -> RowProfile
    encodes_pairs: bool = False  # its row profile may prepare preference rows itself (RowProfile.encode_pair)


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


def frameworks() -> tuple[Framework, ...]:
    return tuple(framework(name) for name in NAMES)


def names_with(part: str) -> tuple[str, ...]:
    """The frameworks that supply ``part`` (a Framework field), in registry order."""
    return tuple(f.name for f in frameworks() if getattr(f, part))


def detect_framework(config: ConfigFile) -> str:
    """The framework whose keys the config uses; the fallback (plain TrainingArguments) when nothing else fits."""
    detecting = sorted((f for f in frameworks() if f.detection), key=lambda f: f.detection.rank)
    found = next((f for f in detecting if f.detection.matches(config.data)), None)
    return found.name if found else next(f.name for f in frameworks() if f.fallback)


def checked_framework(name: str) -> str:
    """``name`` when it names a framework whose schedule mldebug reads (lr-plot, preflight)."""
    scheduling = names_with("read_spec")
    if name not in scheduling:
        raise UsageError(f"--framework: unknown framework {name!r}", hint=f"choose one of {', '.join(scheduling)}")
    return name


def read_spec(config: ConfigFile, name: str | None, world_size: int, targets: TargetVersions | None = None,
              task: str | None = None) -> RunSpec:
    """The run's schedule settings, read as ``name`` (None: the detected framework) reads them. ``task``: the
    preference trainer (dpo, kto, orpo, grpo) when the caller knows it; the config's keys say it otherwise."""
    from mldebug_cli.frameworks import versions

    name = checked_framework(name or detect_framework(config))
    if world_size < 1:
        raise UsageError(f"--world-size must be at least 1, got {world_size}")
    targets = targets or versions.resolve(config.path)
    return framework(name).read_spec(config, name, world_size, targets, task)


def key_schema(config: ConfigFile, name: str, targets: TargetVersions, task: str | None = None) -> KeySchema | None:
    """The keys ``name`` reads from its config file at the target versions (None: not modelled); ``task`` names
    TRL's config class (dpo: DPOConfig, ...) when the keys should not decide."""
    reader = framework(name).key_schema
    return reader(config, targets, task) if reader else None


def versioned_packages(name: str) -> tuple[str, ...]:
    found = entry(name)
    return framework(name).versioned if found else ()


def profile_class(name: str) -> type:
    """The RowProfile class of ``name`` (its class attributes say what it does without a tokenizer)."""
    return framework(name).rows


def row_profile(name: str, options: Any, loaded: Any, row_format: str):
    """How ``name`` turns rows into ids and labels (a frameworks.rows.RowProfile), for these inspect options (their
    ``framework_options``), tokenizer and row format."""
    return framework(name).row_profile(options, loaded, row_format)


def pair_profile(name: str, options: Any, loaded: Any, task: str):
    """The framework's row profile when its own pairwise processor prepares ``task``'s preference rows (its
    ``encode_pair``); None when they are prepared as TRL 1.16 does."""
    if not framework(name).encodes_pairs:
        return None
    rows = row_profile(name, options, loaded, "sharegpt")
    return rows if rows.encodes_pairs(task) else None


def read_plan(config: ConfigFile, name: str, allow_outside: bool = False) -> TrainingPlan:
    """What the config implies for the data checks (a sources.training_plan.TrainingPlan), read by its framework."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.sources.training_plan import finished

    reader = framework(name).read_plan if entry(name) else None
    if reader is None:
        raise InputError(f"{config.path}: preflight's data checks support axolotl, LLaMA-Factory and TRL/HF configs, not {name}")
    return finished(config, reader(config), allow_outside)


def read_preference(config: ConfigFile, name: str, task: str | None, targets: TargetVersions):
    """The preference trainer a config is for (None: supervised fine-tuning, or a framework without one)."""
    from mldebug_cli.frameworks.preference_config import checked_task

    if checked_task(task) == "sft":
        return None
    reader = framework(name).read_preference if entry(name) else None
    return reader(config, task, targets) if reader else None


def dataset_options(plan: TrainingPlan, dataset: DatasetPlan, train_on: str | None) -> Any:
    """The plan's framework's row options for one of its datasets (``train_on``: --train-on, which wins)."""
    own = framework(plan.framework).dataset_options
    return own(plan, dataset, train_on) if own else plan.framework_options
