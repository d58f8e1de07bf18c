"""The config yields zero optimizer steps.

What it finds
    Runs that take no optimizer step: an empty dataloader (fewer rows than one batch per process
    with ``dataloader_drop_last`` / torchtune's drop_last), fewer micro-batches than one
    accumulation window in torchtune (it counts ``floor(L / accumulation)``), or 0 epochs.

Why it matters for training
    The job starts, loads the model, and ends without training (or stops with "args.max_steps
    must be set to a positive value if dataloader does not have a length"), then saves the
    untouched base model as if it were fine-tuned.

Example
    40 rows, ``per_device_train_batch_size: 8``, 8 processes, ``dataloader_drop_last: true``:
    5 batches shared by 8 processes is 0 per process.

Fix
    Lower the batch size, accumulation or process count, or add data.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    if subject.plan.steps_run > 0:
        return
    yield Hit(message=f"the run takes no optimizer step: {_why(subject)}", location=_where(subject))


def _why(subject: Simulation) -> str:
    plan, spec = subject.plan, subject.spec
    if plan.micro_batches_per_epoch == 0:
        per = f"{spec.batch_size} per device x {spec.world_size} process{'es' if spec.world_size > 1 else ''}"
        return f"{plan.train_rows} training rows do not fill one batch ({per}, last partial batch dropped)"
    if plan.optimizer_steps_per_epoch == 0:
        return (
            f"{plan.micro_batches_per_epoch} micro-batches per epoch is less than one accumulation window "
            f"of {spec.grad_accum}, and torchtune only steps on full windows"
        )
    return f"{spec.num_epochs:g} epochs"


def _where(subject: Simulation):
    spec, plan = subject.spec, subject.plan
    if plan.micro_batches_per_epoch == 0:
        return at_key(subject, spec.key("batch_size"), "batch_size")
    if plan.optimizer_steps_per_epoch == 0:
        return at_key(subject, spec.key("grad_accum"), "gradient_accumulation_steps")
    return at_key(subject, spec.key("epochs"), "num_train_epochs")
