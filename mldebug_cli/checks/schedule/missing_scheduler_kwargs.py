"""The scheduler needs kwargs the config does not give.

What it finds
    ``cosine_with_min_lr`` and ``cosine_warmup_with_min_lr`` without ``min_lr`` or
    ``min_lr_rate`` in ``lr_scheduler_kwargs``, and ``warmup_stable_decay`` without
    ``num_decay_steps``.

Why it matters for training
    transformers raises when it builds the scheduler, after the model, data and optimizer are set
    up: the run dies at the start of ``train()``, often after minutes of loading.

Example
    ``lr_scheduler_type: cosine_with_min_lr`` with no ``lr_scheduler_kwargs``:
    "One of min_lr or min_lr_rate should be set through the `lr_scheduler_kwargs`".

Fix
    Add the kwargs, e.g. ``lr_scheduler_kwargs: {min_lr_rate: 0.1}`` or
    ``{num_decay_steps: 200}``.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def missing_kwargs(subject: Simulation) -> tuple[str, ...] | None:
    """The kwargs (one of which is) needed and absent, or None."""
    choice = subject.spec.scheduler
    needed = choice.family.required_kwargs.get(choice.name)  # what its family's constructor refuses to go without
    if needed is None or any(k in choice.kwargs for k in needed):
        return None
    return needed


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    needed = missing_kwargs(subject)
    if needed is None:
        return
    spec = subject.spec
    wanted = " or ".join(needed)
    yield Hit(
        message=(
            f"lr_scheduler_type {spec.scheduler.name} needs {wanted} in lr_scheduler_kwargs: "
            "transformers raises when the Trainer builds the scheduler, before step 1"
        ),
        hint=f"add lr_scheduler_kwargs: {{{needed[-1]}: ...}}",
        location=at_key(subject, spec.key("scheduler_kwargs") or spec.key("scheduler"), "lr_scheduler_kwargs"),
    )
