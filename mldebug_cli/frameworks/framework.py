"""What one training framework is: the object each framework module exports as ``FRAMEWORK``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (versions and schema import the registry, which names this module: their types are named in words)
    from mldebug_cli.schedule.model import RunSpec
    from mldebug_cli.sources.config_file import ConfigFile
    from mldebug_cli.sources.training_plan import DatasetPlan, TrainingPlan


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
class VisionPath:
    """How one framework turns a dataset record into a vision row (frameworks/trl/vision.VisionRow), and how the
    report describes it."""

    encode: Callable[[Any], Any]  # a dataset Record -> its VisionRow
    max_length: int | None
    assistant_header: str  # the text before an assistant reply, after its last special token
    context: Mapping[str, Any]


@dataclass(frozen=True)
class VisionRows:
    """Image rows its trainer takes and mldebug emulates (inspect-data's vision path)."""

    tasks: tuple[str, ...]  # the tasks whose image rows are emulated (sft)
    emulated: str  # what is emulated, for messages: "TRL's SFT collator"
    # (inspect options, the model's VisionProcessor, the dataset's folder) -> its VisionPath
    path: Callable[[Any, Any, Any], VisionPath] | None = None


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
    pair_refusal: Callable[[Any, str], Any] | None = None  # (first row, task) -> why its preference trainers refuse the rows
    # (the values of its own flags given (registry.Flag), by option) -> their settings (InspectOptions.framework_flags)
    read_flags: Callable[[Mapping[str, str]], Any] | None = None
    # (tokenizer folder, its flag settings) -> (the tokenizer folder those settings make, the report context lines
    # saying so), or None when they change nothing
    flagged_tokenizer: Callable[[str, Any], tuple[str, Mapping[str, str]] | None] | None = None
    vision: VisionRows | None = None  # None: its image rows are refused, never read as text
