"""transformers TrainingArguments, TRL SFTConfig and LLaMA-Factory YAML: all run the HF Trainer.

Defaults are TrainingArguments' (transformers 5.23); SFTConfig overrides ``learning_rate`` (2e-5)
and ``logging_steps`` (10); LLaMA-Factory adds ``val_size``, ``max_samples``, ``packing`` and
``cutoff_len``.

Warmup by transformers version: before 5.0 ``warmup_steps`` (a count) wins over ``warmup_ratio``
(``ceil(ratio * T)``); 5.0 to 5.14 copy ``warmup_ratio`` into ``warmup_steps`` (so the ratio wins) and
read a ``warmup_steps`` below 1 as a ratio, and so do 5.2 to 5.14 (the field deprecated); 5.15 removed
``warmup_ratio`` (versions.py reads these boundaries from the wheels' record, keys/version-facts.json).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mldebug_cli.frameworks import record, schema, versions
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Framework
from mldebug_cli.frameworks.hf.schedulers import (
    HF_IGNORES_WARMUP,
    HF_KWARGS_DROPPED,
    HF_METRIC_DRIVEN,
    HF_SCHEDULER_TYPES,
    SCHEDULERS,
)
from mldebug_cli.frameworks.rows import RowProfile
from mldebug_cli.frameworks.trl import plan as trl_plan
from mldebug_cli.frameworks.trl.trainer_facts import transformers_trainer_facts
from mldebug_cli.schedule.model import DatasetMerge, GenerationBatching, Packing, RunSpec, SchedulerChoice
from mldebug_cli.sources.config_file import ConfigFile
from mldebug_cli.sources.row_formats import conversation_as_given

GRPO_NUM_GENERATIONS = 8


@dataclass(frozen=True)
class TrainerDefaults:
    """What a framework that runs the Trainer changes in how its TrainingArguments are read."""

    learning_rate: float = 5e-5
    logging_steps: float = 500
    packing: Callable[[SpecReader], Packing] | None = None  # None: no packing
    generation: Callable[[SpecReader, int, int, int], GenerationBatching] | None = None  # GRPO's generation batches
    validation_key: str | None = None  # a held-out share taken from the training rows (LLaMA-Factory val_size)
    max_samples_key: str | None = None
    merge: Callable[[SpecReader], DatasetMerge | None] | None = None  # a loader that merges and splits before drops
    warmup_share_key: str = "warmup_steps"  # the key a warmup share is given in (transformers >= 5 reads one below 1)


def read_spec(config: ConfigFile, framework: str, world_size: int, targets: versions.TargetVersions,
              task: str | None = None, defaults: TrainerDefaults = TrainerDefaults()) -> RunSpec:
    """The schedule settings of a Trainer run, with ``defaults`` the framework on top of it changes."""
    transformers_version = targets.version("transformers")
    r = SpecReader(config)
    kwargs = r.mapping("scheduler_kwargs", "lr_scheduler_kwargs")
    scheduler = hf_scheduler_choice(r, "lr_scheduler_type", "linear", kwargs)
    warmup_steps = r.number("warmup", "warmup_steps", 0)
    warmup_steps, warmup_ratio = _warmup(r, warmup_steps, transformers_version)
    _note_warmup_effects(r, scheduler, warmup_steps, warmup_ratio)
    packing = defaults.packing(r) if defaults.packing else Packing(False)
    batch_size = r.integer("batch_size", "per_device_train_batch_size", 8)
    grad_accum = r.integer("grad_accum", "gradient_accumulation_steps", 1)
    generation = defaults.generation(r, batch_size, grad_accum, world_size) if defaults.generation else None
    return RunSpec(
        framework=framework,
        learning_rate=float(r.number("learning_rate", "learning_rate", defaults.learning_rate)),
        scheduler=scheduler,
        warmup_steps=float(warmup_steps),
        warmup_ratio=warmup_ratio,
        num_epochs=float(r.number("epochs", "num_train_epochs", 3.0)),
        max_steps=r.integer("max_steps", "max_steps", -1),
        batch_size=batch_size,
        grad_accum=grad_accum,
        world_size=world_size,
        drop_last=r.flag("drop_last", "dataloader_drop_last", False),
        logging_strategy=str(r.text("logging_strategy", "logging_strategy", "steps")),
        logging_steps=r.number("logging_steps", "logging_steps", defaults.logging_steps),
        logging_first_step=r.flag("logging_first_step", "logging_first_step", False),
        eval_strategy=str(r.text("eval_strategy", _eval_strategy_key(r, transformers_version), "no")),
        log_offset=1 if versions.logs_next_step_lr(transformers_version) else 0,
        packing=packing,
        validation_split=r.number("validation_split", defaults.validation_key, None) if defaults.validation_key else None,
        max_samples=r.integer("max_samples", defaults.max_samples_key, None) if defaults.max_samples_key else None,
        merge=defaults.merge(r) if defaults.merge else None,
        deepspeed=r.raw("deepspeed", "deepspeed"),
        generation=generation,
        transformers_version=transformers_version,
        framework_version=targets.version(framework),
        warmup_share_key=defaults.warmup_share_key,
        keys=r.keys,
        ignored=tuple(r.ignored),
        notes=tuple(r.notes),
    )


def _eval_strategy_key(r: SpecReader, transformers_version: str | None) -> str:
    """Up to transformers 4.50 ``evaluation_strategy`` is a field too, and ``__post_init__`` copies it over
    ``eval_strategy`` (the record's ``evaluation_strategy_alias``)."""
    if r.has("evaluation_strategy") and versions.behaviour("transformers", "evaluation_strategy_alias",
                                                           transformers_version):
        return "evaluation_strategy"
    return "eval_strategy"


def grpo_batching(r: SpecReader, batch_size: int, grad_accum: int, world_size: int) -> GenerationBatching:
    """GRPOConfig.__post_init__ (TRL 1.16): the generation batch from ``generation_batch_size`` or
    ``steps_per_generation`` (default: gradient_accumulation_steps), refused as GRPOConfig refuses it."""
    generations = r.integer("num_generations", "num_generations", GRPO_NUM_GENERATIONS)
    iterations = r.integer("num_iterations", "num_iterations", 1)
    size = r.integer("generation_batch_size", "generation_batch_size", None)
    steps = r.integer("steps_per_generation", "steps_per_generation", None)
    global_batch = batch_size * world_size
    if size is not None and steps is not None:
        raise r.error("steps_per_generation", "and generation_batch_size are both set: GRPOConfig refuses the "
                      "config (they can not be both configured at the same time)")
    if size is not None:
        if size % global_batch:
            raise r.error("generation_batch_size", f"({size}) must be divisible by the global batch size "
                          f"({batch_size} x {world_size} processes): GRPOConfig refuses it")
        steps = size // global_batch
    else:
        steps = grad_accum if steps is None else steps
        size = global_batch * steps
    if generations < 2:
        raise r.error("num_generations", f"is {generations}: GRPO needs at least 2 generations per prompt")
    if size % generations:
        key = "generation_batch_size" if r.has("generation_batch_size") else "num_generations"
        raise r.error(key, f"leaves a generation batch of {size} completions that is not divisible by num_generations "
                      f"({generations}): GRPOConfig refuses it")
    if iterations < 1:
        raise r.error("num_iterations", f"must be at least 1, got {iterations}")
    return GenerationBatching(generations, size, steps, iterations)


def hf_scheduler_choice(r: SpecReader, key: str, default: str, kwargs: dict) -> SchedulerChoice:
    """A transformers SchedulerType by name, with the kwargs get_scheduler will pass on."""
    name = str(r.text("scheduler", key, default))
    if name not in HF_SCHEDULER_TYPES:
        raise r.error(key, f"names no transformers scheduler: {name!r} (choose one of {', '.join(HF_SCHEDULER_TYPES)})")
    if kwargs and name in HF_KWARGS_DROPPED:
        r.ignore(
            r.keys.get("scheduler_kwargs", "lr_scheduler_kwargs"),
            f"get_scheduler passes no kwargs to the {name} scheduler: {', '.join(sorted(kwargs))} "
            f"{'has' if len(kwargs) == 1 else 'have'} no effect",
            "remove them, or pick a scheduler that takes them",
        )
        kwargs = {}
    return SchedulerChoice(
        name=name,
        family=SCHEDULERS,
        kwargs=kwargs,
        ignores_warmup=name in HF_IGNORES_WARMUP,
        metric_driven=name in HF_METRIC_DRIVEN,
    )


def _warmup(r: SpecReader, warmup_steps: float, transformers_version: str | None) -> tuple[float, float | None]:
    """(warmup_steps, warmup_ratio) as the Trainer of ``transformers_version`` receives them."""
    shown = transformers_version or f"{versions.NEWEST_CHECKED_TRANSFORMERS} (assumed)"
    if 0 < warmup_steps < 1 and not versions.float_warmup_steps(transformers_version):
        r.ignore("warmup_steps", f"warmup_steps {warmup_steps} is a step count in transformers {shown} (a value "
                 "below 1 is a ratio only from 5.0): the scheduler warms up for less than one step",
                 f"use warmup_ratio: {warmup_steps} with transformers 4.x")
        warmup_steps = 0
    if not r.has("warmup_ratio"):
        return warmup_steps, None
    ratio = float(r.number(None, "warmup_ratio", 0.0))
    if versions.warmup_ratio_removed(transformers_version):
        r.ignore(
            "warmup_ratio",
            f"warmup_ratio is not a TrainingArguments field in transformers {shown} "
            f"(removed in {versions.warmup_ratio_removed_in()}): "
            "HfArgumentParser rejects the file, and where extra keys are allowed it is dropped, "
            f"so warmup is {'warmup_steps' if warmup_steps else '0'}",
            f"use warmup_steps: {ratio} (a float below 1 is a ratio of the total steps, rounded up)",
        )
        return warmup_steps, None
    if versions.warmup_ratio_deprecated(transformers_version):
        if warmup_steps:  # __post_init__ copies warmup_ratio over warmup_steps
            r.ignore("warmup_steps", f"transformers {shown} replaces warmup_steps ({warmup_steps}) with "
                     f"warmup_ratio ({ratio})", "keep only one of them")
        r.keys["warmup"] = "warmup_ratio"
        r.notes.append(f"warmup_ratio is deprecated in transformers {shown} and removed in "
                       f"{versions.warmup_ratio_removed_in()}")
        return ratio, None
    if warmup_steps:
        r.ignore("warmup_ratio", f"warmup_steps ({warmup_steps}) is set, so transformers {shown} does not use "
                 "warmup_ratio", "keep only one of them")
        return warmup_steps, None
    r.keys["warmup"] = "warmup_ratio"
    return 0, ratio


def _note_warmup_effects(r: SpecReader, scheduler: SchedulerChoice, warmup_steps: float, ratio: float | None) -> None:
    """Schedulers driven by eval metrics take no warmup (constant has its own check, LR013)."""
    if scheduler.metric_driven and (warmup_steps or ratio):
        r.ignore(
            r.keys.get("warmup", "warmup_steps"),
            f"the {scheduler.name} scheduler takes no warmup: the LR starts at its full value",
            "drop the warmup, or use a scheduler with warmup",
        )


HF_ON_UNKNOWN = "HfArgumentParser rejects the file (ValueError: Some keys are not used by the HfArgumentParser)"
# keys TrainingArguments dropped, with the key that took their place (the releases come from the record)
HF_REPLACED_BY = {
    "evaluation_strategy": "eval_strategy",
    "warmup_ratio": "warmup_steps (a value below 1 is the ratio of the total steps)",
    "no_cuda": "use_cpu",
}


def version_dependent() -> dict[str, tuple[str, str, str | None]]:
    """Keys whose meaning depends on the transformers version, with the boundaries the wheels' record gives."""
    copied = versions.first_with("transformers", "warmup_ratio", "copied-into-warmup_steps") or "5.0.0"
    absent = versions.first_with("transformers", "warmup_ratio", "absent") or "5.15.0"
    last_copied = record.releases("transformers")[record.releases("transformers").index(absent) - 1]
    fraction = versions.first_with("transformers", "warmup_steps_type", "float") or "5.0.0"
    return {
        "warmup_ratio": ("transformers", f"transformers before {record.minor(copied)} warms up for ceil(ratio x "
                         f"total steps) unless warmup_steps is set, {record.minor(copied)}-{record.minor(last_copied)} "
                         f"copy it over warmup_steps, {record.minor(absent)} and later reject it", None),
        "warmup_steps": ("transformers", "a warmup_steps below 1 is a ratio of the total steps from transformers "
                         f"{record.minor(fraction)}, a step count before", "fraction"),
    }


def training_arguments_schema(targets: versions.TargetVersions, seq2seq: bool = False) -> schema.KeySchema:
    """TrainingArguments' fields at the target transformers version: the installed dataclass when it is that
    version, else the wheels' record at the nearest recorded release."""
    target = targets.get("transformers")
    installed = versions.installed("transformers")
    name = "Seq2SeqTrainingArguments" if seq2seq else "TrainingArguments"
    if installed and target.version in (None, installed):
        if installed in record.releases("transformers"):
            # the record was read from this release's wheel: the installed dataclass's keys, types and choices
            # (held by test_recorded_transformers_keys_match_the_installed_transformers), without importing
            # transformers' trainer, peft and torch
            keys = schema.recorded_keys("transformers", (name, "TrainingArguments"), installed)
        else:
            import transformers

            keys = schema.dataclass_keys([getattr(transformers, name)], text_becomes_enum=True)
        source, release = f"transformers {installed} (installed)", installed
    else:
        release = record.release_for("transformers", target.version)
        keys = schema.recorded_keys("transformers", (name, "TrainingArguments"), release)
        wanted = "" if release == target.version else f", standing in for {target.describe()}"
        source = f"transformers {release} (recorded from its wheel{wanted})"
    renamed = record.dropped("transformers", "transformers", ("TrainingArguments",), keys, release, HF_REPLACED_BY)
    return schema.KeySchema("transformers", source, keys, HF_ON_UNKNOWN, renamed=renamed, converts_text=False,
                            version_dependent=version_dependent())


class Rows(RowProfile):
    """A bare Trainer: the whole row is trained, no EOS appended, the first max_length tokens kept, and
    DataCollatorForLanguageModeling sets every label equal to the pad id to -100."""

    framework = "transformers"
    pad_masked_by_id = True
    reads_message_weights = False  # apply_chat_template renders role and content; a message's loss_weight is not read
    row_format = ""

    def own_sample(self, raw: Any) -> Any:
        """Chat rows as the Trainer's user prepares them: apply_chat_template on the messages as they are (content
        parts unread, a row without an assistant turn trained whole)."""
        if self.row_format == "messages" and isinstance(raw, dict):
            return conversation_as_given(raw)
        return None


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    rows = Rows()
    rows.row_format = row_format
    return rows


def key_schema(config: ConfigFile, targets: versions.TargetVersions, task: str | None = None) -> schema.KeySchema:
    """A TrainingArguments file's keys: TrainingArguments' at the target transformers version (the task decides
    nothing)."""
    return training_arguments_schema(targets)


FRAMEWORK = Framework(
    name="transformers",
    versioned=("transformers",),
    fallback=True,
    read_spec=read_spec,
    key_schema=key_schema,
    read_plan=trl_plan.read_plan,  # a bare TrainingArguments file's data is read as TRL's SFT script reads it
    read_preference=trl_plan.read_preference,
    rows=Rows,
    row_profile=row_profile,
    trainer_facts=transformers_trainer_facts,
)
