"""What one training framework is: the object each framework module exports as ``FRAMEWORK``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the parts' types (none of these modules imports the registry, which imports this one)
    from mldebug_cli.frameworks.preference_config import PreferenceConfig
    from mldebug_cli.frameworks.rows import RowProfile
    from mldebug_cli.frameworks.schema import KeySchema
    from mldebug_cli.frameworks.trainer_facts import TrainerFacts
    from mldebug_cli.frameworks.versions import TargetVersions
    from mldebug_cli.schedule.batch_plan import KeptRow, PreparedPlan
    from mldebug_cli.schedule.model import RunSpec
    from mldebug_cli.sources.config_file import ConfigFile
    from mldebug_cli.sources.tokenizer import LoadedTokenizer
    from mldebug_cli.sources.training_plan import DatasetPlan, TrainingPlan

# inspect-data's options (pipelines.inspect.InspectOptions, a floor above: a row profile reads the attributes it needs)
InspectOptions = Any
# a framework's own settings (its dataset options, its flags' settings): each framework's own record
OwnSettings = Any


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
    # task -> what the trainer does with image rows that mldebug does not emulate (one line, read from its code)
    not_emulated: Mapping[str, str] = field(default_factory=dict)
    # task -> why the framework's run does not start on image rows (one line, read from its code): mldebug says so
    refused: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Framework:
    """What one training framework does, as typed callables and facts; a part it lacks is None (the registry line's
    ``serves`` says which parts a command may ask for). Resolved once per command (``registry.resolve``,
    ``selector.resolve``) and carried along, to worker processes and Ray actors too: every part is a module-level
    function or class (no lambda, no closure), so the object pickles."""

    name: str
    versioned: tuple[str, ...] = ()  # the packages whose versions decide its semantics (its own, the transformers it runs on)
    detection: Detection | None = None  # None: never detected from a config (chosen with --framework only)
    fallback: bool = False  # the framework a config is for when no other one's keys are there
    # (config, framework name, world size, target versions, task) -> the schedule settings
    read_spec: Callable[[ConfigFile, str, int, TargetVersions, str | None], RunSpec] | None = None
    # (config, target versions, task) -> the keys it reads from its config at those versions (None: not modelled)
    key_schema: Callable[[ConfigFile, TargetVersions, str | None], KeySchema | None] | None = None
    read_plan: Callable[[ConfigFile], TrainingPlan] | None = None  # what its config implies for the data checks
    # (config, task, target versions) -> its preference trainer (None: supervised fine-tuning)
    read_preference: Callable[[ConfigFile, str | None, TargetVersions], PreferenceConfig | None] | None = None
    # (plan, dataset, --train-on or None) -> its row options for one of the config's datasets (None: the plan's)
    dataset_options: Callable[[TrainingPlan, DatasetPlan, str | None], OwnSettings] | None = None
    rows: type[RowProfile] | None = None  # its RowProfile class (class attributes say what it does)
    # (inspect options, tokenizer, row format) -> how it turns rows into ids and labels
    row_profile: Callable[[InspectOptions, LoadedTokenizer, str], RowProfile] | None = None
    encodes_pairs: bool = False  # its row profile may prepare preference rows itself (RowProfile.encode_pair)
    end_of_turn_keys: tuple[str, ...] = ()  # a dataset's masking settings that decide which end-of-turn tokens train
    # (config, framework name, world size) -> what its config makes the trainer do
    trainer_facts: Callable[[ConfigFile, str, int], TrainerFacts] | None = None
    # (config, world size, the dataset's rows it keeps as mldebug encodes them, the dataset's row count) -> the batch
    # plan over the rows it prepares from them before its sampler (schedule.batch_plan.PlanRefused: not replayed);
    # None: its sampler reads the file's rows as they are (TrainerFacts.sampler)
    prepared_plan: Callable[[ConfigFile, int, Sequence[KeptRow], int], PreparedPlan] | None = None
    # (first row, task) -> (why its preference trainers refuse rows shaped like it, how to convert them) or None
    pair_refusal: Callable[[object, str], tuple[str, str] | None] | None = None
    # (the values of its own flags given (registry.Flag), by option) -> their settings (InspectOptions.framework_flags)
    read_flags: Callable[[Mapping[str, str]], OwnSettings] | None = None
    # (tokenizer folder, its flag settings) -> (the tokenizer folder those settings make, the report context lines
    # saying so), or None when they change nothing
    flagged_tokenizer: Callable[[str, OwnSettings], tuple[str, Mapping[str, str]] | None] | None = None
    vision: VisionRows | None = None  # None: its image rows are refused, never read as text
