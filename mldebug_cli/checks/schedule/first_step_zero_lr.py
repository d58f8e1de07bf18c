"""The first optimizer step runs at LR 0.

What it finds
    Schedules whose warmup starts at 0, so optimizer step 1 uses learning rate 0. In transformers
    the warmup factor at step index 0 is 0/W for every scheduler with a linear warmup.

Why it matters for training
    The first batch's update is thrown away (Adam still folds its gradient into the moment
    estimates). Harmless for long runs, but with a handful of steps, or when the logs show
    ``learning_rate: 0.0`` at step 1, people suspect a bug; it also means the LR a run logs at step
    k is k-1 warmup steps in.

Example
    ``lr_scheduler_type: linear``, ``warmup_steps: 10``: steps 1..11 run at 0, 0.1, ..., 1.0 x LR.

Fix
    Nothing to fix for most runs; to make step 1 count, use ``cosine_warmup_with_min_lr`` (its
    warmup starts at 1/W) or a scheduler without warmup.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "info"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    if not subject.schedule or subject.schedule[0].lr != 0:
        return
    warmup = subject.plan.warmup_steps
    yield Hit(
        message=(
            f"optimizer step 1 runs at LR 0: the warmup ({warmup} step{'s' if warmup != 1 else ''}) starts at 0, "
            "so the first update is lost"
        ),
        location=at_key(subject, subject.spec.key("warmup"), "warmup_steps"),
    )
