"""The one place that picks a framework: detection from a config's keys, and the calls that hand a config or rows
to the chosen framework's ``FRAMEWORK`` object (frameworks.registry lists them)."""

from __future__ import annotations

from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks import preference_config, versions
from mldebug_cli.frameworks.registry import chosen, entry, framework, frameworks, serving
from mldebug_cli.frameworks.schema import KeySchema
from mldebug_cli.frameworks.versions import TargetVersions
from mldebug_cli.schedule.model import RunSpec
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.training_plan import DatasetPlan, TrainingPlan, finished


def detect_framework(config: ConfigFile) -> str:
    """The framework whose keys the config uses; the fallback (plain TrainingArguments) when nothing else fits."""
    detecting = sorted(((f.detection, f) for f in frameworks() if f.detection), key=lambda pair: pair[0].rank)
    found = next((f for detection, f in detecting if detection.matches(config.data)), None)
    return found.name if found else next(f.name for f in frameworks() if f.fallback)


def checked_framework(name: str) -> str:
    """``name`` when it names a framework whose schedule mldebug reads (lr-plot, preflight)."""
    return chosen(name, "schedule")


def read_spec(config: ConfigFile, name: str | None, world_size: int, targets: TargetVersions | None = None,
              task: str | None = None) -> RunSpec:
    """The run's schedule settings, read as ``name`` (None: the detected framework) reads them. ``task``: the
    preference trainer (dpo, kto, orpo, grpo) when the caller knows it; the config's keys say it otherwise."""
    name = checked_framework(name or detect_framework(config))
    if world_size < 1:
        raise UsageError(f"--world-size must be at least 1, got {world_size}")
    targets = targets or versions.resolve(config.path, framework=name)
    reader = framework(name).read_spec
    assert reader is not None  # checked_framework: it serves "schedule", whose part this is
    return reader(config, name, world_size, targets, task)


def key_schema(config: ConfigFile, name: str, targets: TargetVersions, task: str | None = None) -> KeySchema | None:
    """The keys ``name`` reads from its config file at the target versions (None: not modelled); ``task`` names
    TRL's config class (dpo: DPOConfig, ...) when the keys should not decide."""
    reader = framework(name).key_schema if entry(name) else None
    return reader(config, targets, task) if reader else None


def versioned_packages(name: str) -> tuple[str, ...]:
    found = entry(name)
    return framework(name).versioned if found else ()


def profile_class(name: str) -> type:
    """The RowProfile class of ``name`` (its class attributes say what it does without a tokenizer)."""
    rows = framework(name).rows
    assert rows is not None  # the caller's --framework serves "rows"
    return rows


def row_profile(name: str, options: Any, loaded: Any, row_format: str):
    """How ``name`` turns rows into ids and labels (a frameworks.rows.RowProfile), for these inspect options (their
    ``framework_options``), tokenizer and row format."""
    profile = framework(name).row_profile
    assert profile is not None  # the caller's --framework serves "rows", whose part this is
    return profile(options, loaded, row_format)


def pair_profile(name: str, options: Any, loaded: Any, task: str):
    """The framework's row profile when its own pairwise processor prepares ``task``'s preference rows (its
    ``encode_pair``); None when they are prepared as TRL 1.16 does."""
    if not framework(name).encodes_pairs:
        return None
    rows = row_profile(name, options, loaded, "sharegpt")
    return rows if rows.encodes_pairs(task) else None


def read_plan(config: ConfigFile, name: str, allow_outside: bool = False) -> TrainingPlan:
    """What the config implies for the data checks (a sources.training_plan.TrainingPlan), read by its framework."""
    reader = framework(name).read_plan if entry(name) else None
    if reader is None:
        configs = ", ".join(e.shown for e in serving("plan"))
        raise InputError(f"{config.path}: preflight's data checks read {configs} configs, not {name}")
    return finished(config, reader(config), allow_outside)


def read_preference(config: ConfigFile, name: str, task: str | None, targets: TargetVersions):
    """The preference trainer a config is for (None: supervised fine-tuning, or a framework without one)."""
    return preference_config.read_preference(config, name, task, targets)


def dataset_options(plan: TrainingPlan, dataset: DatasetPlan, train_on: str | None) -> Any:
    """The plan's framework's row options for one of its datasets (``train_on``: --train-on, which wins)."""
    own = framework(plan.framework).dataset_options
    return own(plan, dataset, train_on) if own else plan.framework_options
