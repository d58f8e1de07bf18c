"""torchtune recipe YAML: ``optimizer.lr``, the ``lr_scheduler`` component, epochs and batch keys.

The recipes count ``len(dataloader) // gradient_accumulation_steps`` optimizer steps per epoch
(floor: the leftover micro-batches never trigger a step), cap it with ``max_steps_per_epoch``,
build the scheduler for ``epochs * steps_per_epoch`` steps, and log the LR after stepping the
scheduler (the next step's LR). The dataloader always drops the last partial batch.
"""

from __future__ import annotations

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.common import SpecReader
from mldebug_cli.frameworks.framework import Detection, Framework
from mldebug_cli.frameworks.torchtune_data import Rows, read_flags, row_profile
from mldebug_cli.frameworks.versions import TargetVersions
from mldebug_cli.schedule.model import EPOCH_LOOP_STEPS, TORCHTUNE_FAMILY, Packing, RunSpec, SchedulerChoice
from mldebug_cli.sources.config_file import ConfigFile

COSINE_COMPONENTS = (
    "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
    "torchtune.modules.get_cosine_schedule_with_warmup",  # before torchtune 0.3
)


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
        counting=EPOCH_LOOP_STEPS,
        warmup_share_key=None,  # torchtune's schedulers take warmup only as a step count
        warmup_steps_key="lr_scheduler.num_warmup_steps",
    )


def _scheduler(r: SpecReader) -> tuple[SchedulerChoice, float]:
    component = r.text("scheduler", "lr_scheduler._component_", None)
    if component is None:
        return SchedulerChoice("constant", TORCHTUNE_FAMILY, ignores_warmup=True), 0.0
    if component not in COSINE_COMPONENTS:
        raise r.error(
            "lr_scheduler._component_",
            f"is {component!r}, which lr-plot does not simulate (it knows {', '.join(COSINE_COMPONENTS)})",
        )
    if not r.has("lr_scheduler.num_warmup_steps"):
        raise r.error("lr_scheduler", "needs num_warmup_steps: the cosine scheduler has no default for it")
    warmup = r.integer("warmup", "lr_scheduler.num_warmup_steps", 0)
    kwargs = {"num_cycles": float(r.number(None, "lr_scheduler.num_cycles", 0.5))}
    return SchedulerChoice("cosine", TORCHTUNE_FAMILY, kwargs), float(warmup)


FRAMEWORK = Framework(
    name="torchtune",
    detection=Detection(rank=0, component_key="_component_"),
    read_spec=read_spec,
    rows=Rows,  # its SFT builders on its Qwen2.5 tokenizer (torchtune_data)
    row_profile=row_profile,
    read_flags=read_flags,
)
