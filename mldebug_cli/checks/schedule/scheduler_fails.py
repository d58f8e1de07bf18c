"""The scheduler raises: at construction, or when the loop steps it.

What it finds
    Schedulers whose constructor raises (kwargs the scheduler does not take, such as ``min_lr``
    for ``cosine`` or ``num_training_steps`` inside ``lr_scheduler_kwargs``; ``lr_end`` not below
    the learning rate for ``polynomial``; both ``min_lr`` and ``min_lr_rate``; unknown WSD shapes),
    and schedules that raise while stepping: ``polynomial`` with warmup equal to the total steps
    divides by zero when the Trainer steps the scheduler after the last optimizer step. Missing
    required kwargs are LR005.

Why it matters for training
    A constructor error kills the run at the start of ``train()``, after the model, data and
    optimizer are loaded; a stepping error kills it at the end, after all the compute is spent and
    before the final checkpoint is saved.

Example
    ``lr_scheduler_type: cosine`` with ``lr_scheduler_kwargs: {min_lr: 1e-6}``:
    "get_cosine_schedule_with_warmup() got an unexpected keyword argument 'min_lr'".

Fix
    Use the kwargs the scheduler takes (``cosine_with_min_lr`` for a floor), or remove them; keep
    warmup shorter than training.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.checks.schedule.missing_scheduler_kwargs import missing_kwargs
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    if subject.scheduler_error is None or missing_kwargs(subject) is not None:
        return
    spec, after = subject.spec, subject.scheduler_fails_after
    if not after:
        when = "cannot be built, so the run stops before step 1"
        where = at_key(subject, spec.key("scheduler_kwargs") or spec.key("scheduler"), "lr_scheduler_type")
    else:
        when = f"raises when the loop steps it after optimizer step {after}, so the run crashes there"
        where = at_key(subject, spec.key("warmup") or spec.key("scheduler"), "lr_scheduler_type")
    yield Hit(message=f"the {spec.scheduler.name} scheduler {when}: {subject.scheduler_error}", location=where)
