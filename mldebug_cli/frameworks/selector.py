"""The one place that picks a framework: detection from a config's keys, the one look-up of a ``--framework``
value (``resolve``), and the calls that hand a config or rows to the chosen framework's ``FRAMEWORK`` object
(frameworks.registry lists them). Each call takes the resolved object; a name (tests, tools) is looked up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks import preference_config, registry, versions
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.preference_config import PreferenceConfig
from mldebug_cli.frameworks.registry import chosen, entry, framework, serving
from mldebug_cli.frameworks.rows import RowProfile
from mldebug_cli.frameworks.schema import KeySchema
from mldebug_cli.frameworks.trainer_facts import MAX_WORLD_SIZE, TrainerFacts
from mldebug_cli.frameworks.versions import TargetVersions
from mldebug_cli.schedule.model import RunSpec
from mldebug_cli.sources.config_file import ConfigFile, load_config
from mldebug_cli.sources.training_plan import DatasetPlan, TrainingPlan, finished

FrameworkRef = Framework | str  # a resolved framework, or a name to look up (tests and tools call with names)


def _detected(config: ConfigFile) -> registry.Entry:
    """The registry line whose keys the config uses; the fallback's (plain TrainingArguments) when nothing else fits."""
    loaded = [(line, registry.load(line)) for line in registry.REGISTRY]
    detecting = sorted(((f.detection, line) for line, f in loaded if f.detection), key=lambda pair: pair[0].rank)
    found = next((line for detection, line in detecting if detection.matches(config.data)), None)
    return found or next(line for line, f in loaded if f.fallback)


def detected(config: ConfigFile) -> Framework:
    """The FRAMEWORK whose keys the config uses (the fallback when nothing else fits), as it is: a command checks what
    it needs of it."""
    return registry.load(_detected(config))


def _known(name: FrameworkRef) -> Framework | None:
    """``name``'s FRAMEWORK (None: no such framework); a resolved one as it is."""
    if isinstance(name, Framework):
        return name
    line = entry(name)
    return registry.load(line) if line is not None else None


def detect_framework(config: ConfigFile) -> str:
    """The name of the framework whose keys the config uses (the fallback when nothing else fits)."""
    return _detected(config).name


def resolve(config: ConfigFile, name: str | None, *capabilities: str) -> Framework:
    """The framework a command runs as: ``--framework`` looked up once, or the one detected from the config's keys;
    a UsageError when it does not serve ``capabilities``."""
    if name is not None:
        return registry.resolve(name, *capabilities)
    return registry.require(_detected(config), *capabilities)


def _object(ref: FrameworkRef) -> Framework:
    return ref if isinstance(ref, Framework) else framework(ref)


def checked_framework(name: str) -> str:
    """``name`` when it names a framework whose schedule mldebug reads (lr-plot, preflight)."""
    return chosen(name, "schedule")


def read_spec(config: ConfigFile, name: FrameworkRef | None, world_size: int, targets: TargetVersions | None = None,
              task: str | None = None) -> RunSpec:
    """The run's schedule settings, read as ``name`` (None: the detected framework) reads them. ``task``: the
    preference trainer (dpo, kto, orpo, grpo) when the caller knows it; the config's keys say it otherwise."""
    found = registry.checked(name, "schedule") if isinstance(name, Framework) else resolve(config, name, "schedule")
    if world_size < 1:
        raise UsageError(f"--world-size must be at least 1, got {world_size}")
    targets = targets or versions.resolve(config.path, framework=found.name)
    reader = found.read_spec
    assert reader is not None  # it serves "schedule", whose part this is
    return reader(config, found.name, world_size, targets, task)


def key_schema(config: ConfigFile, name: FrameworkRef, targets: TargetVersions, task: str | None = None) -> KeySchema | None:
    """The keys ``name`` reads from its config file at the target versions (None: not modelled); ``task`` names
    TRL's config class (dpo: DPOConfig, ...) when the keys should not decide."""
    found = _known(name)
    reader = found.key_schema if found else None
    return reader(config, targets, task) if reader else None


def versioned_packages(name: FrameworkRef) -> tuple[str, ...]:
    found = _known(name)
    return found.versioned if found else ()


def profile_class(name: FrameworkRef) -> type[RowProfile]:
    """The RowProfile class of ``name`` (its class attributes say what it does without a tokenizer)."""
    rows = _object(name).rows
    assert rows is not None  # the caller's --framework serves "rows"
    return rows


def row_profile(name: FrameworkRef, options: Any, loaded: Any, row_format: str) -> RowProfile:
    """How ``name`` turns rows into ids and labels (a frameworks.rows.RowProfile), for these inspect options (their
    ``framework_options``), tokenizer and row format."""
    profile = _object(name).row_profile
    assert profile is not None  # the caller's --framework serves "rows", whose part this is
    return profile(options, loaded, row_format)


def pair_profile(name: FrameworkRef, options: Any, loaded: Any, task: str) -> RowProfile | None:
    """The framework's row profile when its own pairwise processor prepares ``task``'s preference rows (its
    ``encode_pair``); None when they are prepared as TRL 1.16 does."""
    if not _object(name).encodes_pairs:
        return None
    rows = row_profile(name, options, loaded, "sharegpt")
    return rows if rows.encodes_pairs(task) else None


def read_plan(config: ConfigFile, name: FrameworkRef, allow_outside: bool = False) -> TrainingPlan:
    """What the config implies for the data checks (a sources.training_plan.TrainingPlan), read by its framework."""
    found = _known(name)
    reader = found.read_plan if found else None
    if reader is None:
        configs = ", ".join(e.shown for e in serving("plan"))
        shown = name if isinstance(name, str) else name.name
        raise InputError(f"{config.path}: preflight's data checks read {configs} configs, not {shown}")
    return finished(config, reader(config), allow_outside)


def read_preference(config: ConfigFile, name: FrameworkRef, task: str | None,
                    targets: TargetVersions) -> PreferenceConfig | None:
    """The preference trainer a config is for (None: supervised fine-tuning, or a framework without one), read by
    the framework's own reader."""
    if preference_config.checked_task(task) == "sft":
        return None
    found = _known(name)
    reader = found.read_preference if found else None
    return reader(config, task, targets) if reader else None


def dataset_options(plan: TrainingPlan, dataset: DatasetPlan, train_on: str | None,
                    found: Framework | None = None) -> Any:
    """The plan's framework's row options for one of its datasets (``train_on``: --train-on, which wins); ``found``:
    the plan's framework when the caller resolved it (None: looked up by the plan's name)."""
    own = (found if found is not None and found.name == plan.framework else framework(plan.framework)).dataset_options
    return own(plan, dataset, train_on) if own else plan.framework_options


def trainer_framework(config: ConfigFile, framework: FrameworkRef | None = None) -> Framework:
    """The framework whose trainer runs ``config``, resolved once (memory, probe): a resolved one as it is, a name
    looked up (it must read trainer settings), None: detected from the config's keys (``read_trainer_facts`` says
    when mldebug does not read that one's trainer settings)."""
    if isinstance(framework, Framework):
        return framework
    return registry.resolve(framework, "trainer") if framework else registry.load(_detected(config))


def read_trainer_facts(config_path: str | Path, framework: FrameworkRef | None = None, world_size: int = 1) -> TrainerFacts:
    """What one config file makes the trainer do, read by ``framework`` (a name is looked up; None: detected)."""
    config = load_config(config_path)
    found = trainer_framework(config, framework)
    if not 1 <= world_size <= MAX_WORLD_SIZE:
        raise InputError(f"--world-size must be from 1 to {MAX_WORLD_SIZE:,}, got {world_size}")
    reader = found.trainer_facts
    if reader is None:
        raise InputError(f"{config.path}: mldebug does not read trainer settings of {found.name} configs")
    return reader(config, found.name, world_size)
