"""torchtune recipe YAML: ``optimizer.lr``, the ``lr_scheduler`` component, epochs and batch keys.

The recipes count ``len(dataloader) // gradient_accumulation_steps`` optimizer steps per epoch
(floor: the leftover micro-batches never trigger a step), cap it with ``max_steps_per_epoch``,
build the scheduler for ``epochs * steps_per_epoch`` steps, and log the LR after stepping the
scheduler (the next step's LR). The dataloader always drops the last partial batch.

Its schedulers (torchtune.training.lr_schedulers): the cosine with warmup, or none (a constant LR); their
built-in formulas are :data:`SCHEDULERS`, and its epoch loop's step counting is :data:`COUNTING`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Detection, Framework
from mldebug_cli.frameworks.torchtune.data import Rows, read_flags, row_profile
from mldebug_cli.frameworks.versions import TargetVersions
from mldebug_cli.schedule.arithmetic import missing_rows
from mldebug_cli.schedule.formulas import scaled
from mldebug_cli.schedule.model import (
    EPOCH_LOOP_STEPS,
    Builder,
    LrAt,
    Packing,
    RunSpec,
    SchedulerChoice,
    SchedulerFamily,
    StepCounting,
    StepPlan,
)
from mldebug_cli.sources.config_file import ConfigFile

COSINE_COMPONENTS = (
    "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
    "torchtune.modules.get_cosine_schedule_with_warmup",  # before torchtune 0.3
)


def _cosine(base_lr, warmup, total, kwargs) -> LrAt:
    num_cycles = kwargs.get("num_cycles", 0.5)

    def factor(index: int) -> float:
        if index < warmup:
            return index / max(1, warmup)
        progress = (index - warmup) / max(1, total - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * num_cycles * 2.0 * progress)))

    return scaled(base_lr, factor)


def _constant(base_lr, warmup, total, kwargs) -> LrAt:
    return lambda index: base_lr


_BUILDERS: Mapping[str, Builder] = {"cosine": _cosine, "constant": _constant}
SCHEDULERS = SchedulerFamily("torchtune.training.lr_schedulers", builders=_BUILDERS)


def plan(spec: RunSpec, rows: int | None) -> StepPlan:
    """The recipes' epoch loop: floor(L / accumulation) steps an epoch, capped by max_steps_per_epoch."""
    if rows is None:
        raise missing_rows(spec)
    per_rank = rows if spec.world_size == 1 else math.ceil(rows / spec.world_size)  # DistributedSampler pads
    length = per_rank // spec.batch_size  # drop_last=True
    per_epoch = length // spec.grad_accum
    if spec.max_steps_per_epoch is not None and spec.max_steps_per_epoch < per_epoch:
        per_epoch = spec.max_steps_per_epoch
    epochs = int(spec.num_epochs)
    total = epochs * per_epoch
    return StepPlan(
        train_rows=rows,
        micro_batches_per_epoch=length,
        optimizer_steps_per_epoch=per_epoch,
        total_steps=total,
        steps_run=total,
        warmup_steps=int(spec.warmup_steps or 0),
        epochs_requested=spec.num_epochs,
        epochs_run=(epochs - 1) + per_epoch * spec.grad_accum / length if per_epoch else 0.0,
        epoch_loops=epochs,
        leftover_micro_batches=length - per_epoch * spec.grad_accum if per_epoch else length,
    )


COUNTING = StepCounting(EPOCH_LOOP_STEPS, plan=plan)


def read_spec(config: ConfigFile, framework: str, world_size: int, targets: TargetVersions,
              task: str | None = None) -> RunSpec:
    r = SpecReader(config)
    if not r.has("optimizer.lr"):
        raise InputError(f"{config.path}: torchtune configs need optimizer.lr")
    if not r.has("batch_size"):
        raise InputError(f"{config.path}: torchtune configs need batch_size")
    scheduler, warmup = _scheduler(r)
    return RunSpec(
        framework="torchtune",
        learning_rate=float(r.number("learning_rate", "optimizer.lr", None)),
        scheduler=scheduler,
        warmup_steps=float(warmup),
        warmup_ratio=None,
        num_epochs=float(r.integer("epochs", "epochs", 1)),
        max_steps=-1,
        batch_size=r.integer("batch_size", "batch_size", None),
        grad_accum=r.integer("grad_accum", "gradient_accumulation_steps", 1),
        world_size=world_size,
        drop_last=True,
        max_steps_per_epoch=r.integer("max_steps", "max_steps_per_epoch", None),
        logging_steps=r.number("logging_steps", "log_every_n_steps", 1),
        log_offset=1,
        packing=Packing(
            enabled=bool(r.flag("packing", "dataset.packed", False)),
            key="dataset.packed",
            sequence_len=r.integer(None, "tokenizer.max_seq_len", None),
        ),
        framework_version=targets.version("torchtune"),
        keys=r.keys,
        ignored=tuple(r.ignored),
        notes=tuple(r.notes),
        counting=COUNTING,
        warmup_share_key=None,  # torchtune's schedulers take warmup only as a step count
        warmup_steps_key="lr_scheduler.num_warmup_steps",
    )


def _scheduler(r: SpecReader) -> tuple[SchedulerChoice, float]:
    component = r.text("scheduler", "lr_scheduler._component_", None)
    if component is None:
        return SchedulerChoice("constant", SCHEDULERS, ignores_warmup=True), 0.0
    if component not in COSINE_COMPONENTS:
        raise r.error(
            "lr_scheduler._component_",
            f"is {component!r}, which lr-plot does not simulate (it knows {', '.join(COSINE_COMPONENTS)})",
        )
    if not r.has("lr_scheduler.num_warmup_steps"):
        raise r.error("lr_scheduler", "needs num_warmup_steps: the cosine scheduler has no default for it")
    warmup = r.integer("warmup", "lr_scheduler.num_warmup_steps", 0)
    kwargs = {"num_cycles": float(r.number(None, "lr_scheduler.num_cycles", 0.5))}
    return SchedulerChoice("cosine", SCHEDULERS, kwargs), float(warmup)


FRAMEWORK = Framework(
    name="torchtune",
    detection=Detection(rank=0, component_key="_component_"),
    read_spec=read_spec,
    rows=Rows,  # its SFT builders on its Qwen2.5 tokenizer (torchtune.data)
    row_profile=row_profile,
    read_flags=read_flags,
)
