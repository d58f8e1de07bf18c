"""The frozen data of one simulation: what the config says, how steps are counted, the LR per step."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# how a framework turns rows into optimizer steps (StepCounting.kind)
TRAINER_STEPS = "trainer"  # the Trainer's loop: steps per epoch from the dataloader, max_steps wins
PRECOMPUTED_STEPS = "precomputed"  # the framework computes the total steps itself and hands the Trainer max_steps,
# and derives its warmup and logging defaults from that total
EPOCH_LOOP_STEPS = "epoch-loop"  # its own epoch loop: max_steps_per_epoch caps each epoch, a last partial
# accumulation window carries its gradients into the next epoch

LrAt = Callable[[int], float]  # the LR after ``index`` scheduler steps, i.e. the LR of optimizer step ``index + 1``
# (base LR, warmup steps, total steps, kwargs) -> lr_at: a scheduler's built-in formula (schedule.formulas)
Builder = Callable[[float, int, int, dict[str, Any]], LrAt]


@dataclass(frozen=True)
class RealScheduler:
    """A framework's own scheduler, importable here: how to build it on an optimizer and read the LR it logs."""

    engine: str  # how reports name it (the package and version that built it)
    build: Callable[[Any, SchedulerChoice, int, int], Any]  # (optimizer, choice, warmup, total) -> the scheduler
    read_lr: Callable[[Any, Any], float]  # (scheduler, optimizer) -> the LR the training loop logs
    steps: Callable[[Any], bool] = lambda scheduler: True  # False: the loop steps it only when eval metrics come


@dataclass(frozen=True, eq=False)
class SchedulerFamily:
    """The schedulers one framework builds, supplied by its module (``frameworks/``): the schedule package
    knows no framework's schedulers, it asks the family a SchedulerChoice carries."""

    name: str  # the code that builds them
    builders: Mapping[str, Builder]  # scheduler name -> its built-in formula, raising ScheduleBuildError as it would
    real: Callable[[SchedulerChoice], RealScheduler | None] | None = None  # its own scheduler when it imports here
    required_kwargs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # name -> kwargs, one of them needed
    with_warmup: Mapping[str, str] = field(default_factory=dict)  # a scheduler built without warmup -> its twin with
    # the real scheduler's engine name (as ``real`` names it) when its built-in formula for this choice is held equal to
    # it, float for float, at the installed release (tests/schedule/test_lr_engines.py), found without importing
    # torch; None: only the real scheduler says what it does
    exact: Callable[[SchedulerChoice], str | None] | None = None


@dataclass(frozen=True)
class SchedulerChoice:
    """Which scheduler the run builds, with the kwargs it receives."""

    name: str
    family: SchedulerFamily
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    ignores_warmup: bool = False  # constant, reduce_lr_on_plateau, greedy
    metric_driven: bool = False  # the LR changes only when eval metrics are reported


@dataclass(frozen=True, eq=False)
class StepCounting:
    """How a framework turns rows into optimizer steps (RunSpec.counting): its kind of loop, and the arithmetic its
    module supplies where that is not the Trainer loop's (schedule.arithmetic.trainer_plan)."""

    kind: str = TRAINER_STEPS  # TRAINER_STEPS, PRECOMPUTED_STEPS or EPOCH_LOOP_STEPS
    plan: Callable[[RunSpec, int | None], StepPlan] | None = None  # (spec, training rows or None) -> the plan
    total_steps: Callable[[RunSpec, int], int] | None = None  # (spec, rows) -> the total it computes itself
    warmup_steps: Callable[[RunSpec, int], float] | None = None  # (spec, that total) -> the warmup it derives
    logging_steps: Callable[[int], int] | None = None  # that total -> its default logging interval


TRAINER_LOOP = StepCounting()


@dataclass(frozen=True)
class IgnoredKey:
    """A config key that has no effect (or stops the run) in the framework version in use."""

    key: str
    reason: str
    hint: str | None = None


@dataclass(frozen=True)
class DatasetMerge:
    """How a loader merges a config's datasets and splits off its eval rows before its processor drops rows
    (LLaMA-Factory's ``merge_dataset`` and ``split_dataset``): ``schedule.merging`` replays it on the rows measured."""

    strategy: str = "concat"  # concat, interleave_under, interleave_over, interleave_once
    probabilities: tuple[float, ...] | None = None  # interleave_probs
    seed: int = 42  # the training seed both draws use
    val_size: float | int = 0.0  # a share (float) or a row count (int) split off the merged rows by train_test_split
    refused: str | None = None  # why the loader raises when it merges several datasets this way (None: it merges)


@dataclass(frozen=True)
class Packing:
    enabled: bool = False
    key: str | None = None
    sequence_len: int | None = None
    efficiency_estimate: float | None = None  # axolotl's sample_packing_eff_est
    packs_every_row: bool = False  # best fit decreasing over all rows, untrained ones too, in fixed-size batches (TRL)


@dataclass(frozen=True)
class GenerationBatching:
    """GRPO (GRPOConfig.__post_init__, RepeatSampler): a generation batch holds ``generation_batch_size``
    completions, ``num_generations`` per prompt, and is trained on over ``steps_per_generation`` micro-batches
    ``num_iterations`` times."""

    num_generations: int
    generation_batch_size: int
    steps_per_generation: int
    num_iterations: int = 1

    @property
    def prompts_per_generation(self) -> int:
        return self.generation_batch_size // self.num_generations


@dataclass(frozen=True)
class RunSpec:
    """A run's settings after the framework's key mapping and defaults.

    ``keys`` maps a setting name (``warmup``, ``scheduler``, ...) to the config key it was read
    from, so findings can point at it; settings left at their default have no entry.
    """

    framework: str
    learning_rate: float
    scheduler: SchedulerChoice
    warmup_steps: float | None  # as the framework receives it: a count, a ratio below 1 (transformers >= 5), None: its default
    warmup_ratio: float | None  # transformers 4.x and axolotl only (5.0-5.14 copy it into warmup_steps)
    num_epochs: float
    max_steps: int  # <= 0: not set
    batch_size: int  # per device
    grad_accum: int
    world_size: int
    drop_last: bool = False
    max_steps_per_epoch: int | None = None  # torchtune
    logging_strategy: str = "steps"
    logging_steps: float | None = None
    logging_first_step: bool = False
    eval_strategy: str | None = None  # None: the framework decides (axolotl, torchtune)
    log_offset: int = 0  # 1: the framework logs the LR of the next step (torchtune, transformers <= 4.50)
    packing: Packing = field(default_factory=Packing)
    validation_split: float | None = None  # held-out share or row count taken from the training rows
    max_samples: int | None = None
    merge: DatasetMerge | None = None  # the loader merges and splits before dropping rows (LLaMA-Factory)
    deepspeed: Any = None
    generation: GenerationBatching | None = None  # GRPO: the dataloader yields repeated generation batches
    transformers_version: str | None = None
    framework_version: str | None = None  # the target version of the framework package (None: not installed)
    versions_note: str | None = None  # which versions were assumed, and from where
    keys: Mapping[str, str] = field(default_factory=dict)
    ignored: tuple[IgnoredKey, ...] = ()
    notes: tuple[str, ...] = ()
    counting: StepCounting = TRAINER_LOOP  # the framework's step counting
    warmup_share_key: str | None = "warmup_steps"  # the key that takes warmup as a share (None: only a count)
    warmup_steps_key: str = "warmup_steps"  # the key that takes warmup as a step count

    def key(self, setting: str) -> str | None:
        return self.keys.get(setting)


@dataclass(frozen=True)
class StepPlan:
    """The step arithmetic of one run (per process)."""

    train_rows: int | None
    micro_batches_per_epoch: int | None  # L
    optimizer_steps_per_epoch: int | None  # n
    total_steps: int  # T: the number of optimizer steps the scheduler is built for
    steps_run: int  # optimizer steps the loop actually takes (0 when the dataloader is empty)
    warmup_steps: int  # W as the scheduler receives it
    epochs_requested: float
    epochs_run: float | None
    epoch_loops: int | None  # how many epochs the loop starts
    leftover_micro_batches: int = 0  # L mod gradient accumulation: the last window of each epoch
    total_steps_range: tuple[int | None, int] | None = None  # packing: bounds of T (None: no lower bound)
    packed_rows_range: tuple[int | None, int] | None = None
    packing_basis: str | None = None  # what the packed-row estimate rests on


@dataclass(frozen=True)
class SchedulePoint:
    step: int  # optimizer step, 1-based
    lr: float  # the LR the optimizer uses on this step
    epoch: float | None  # the trainer's epoch counter after this step
    micro_batch: int | None  # micro-batches consumed (per process) when this step runs


@dataclass(frozen=True)
class Simulation:
    """Everything the checks look at."""

    config_path: str
    config_lines: Mapping[str, int]
    spec: RunSpec
    plan: StepPlan
    schedule: tuple[SchedulePoint, ...]
    engine: str
    framework_version: str | None
    scheduler_error: str | None = None  # what the scheduler raises (the run stops there)
    scheduler_fails_after: int | None = None  # optimizer steps done by then (0: while building it)
    deepspeed_scheduler: Mapping[str, Any] | None = None
    overlay: Any = None  # overlay.Overlay when --trainer-state was given

    def line(self, key: str | None) -> int | None:
        return None if key is None else self.config_lines.get(key)

    @property
    def lrs(self) -> list[float]:
        return [p.lr for p in self.schedule]
