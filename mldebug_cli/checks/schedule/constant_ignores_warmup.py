"""lr_scheduler_type constant with warmup set: the warmup is ignored.

What it finds
    ``constant`` schedulers in transformers (and axolotl/LLaMA-Factory/TRL, which use them) with a
    non-zero ``warmup_steps``/``warmup_ratio``. ``get_scheduler`` builds ``constant`` without
    looking at the warmup.

Why it matters for training
    The run starts at the full LR on step 1, with no warmup, while the config suggests a gentle
    start; for full fine-tuning of a large model this can spike the loss in the first steps.

Example
    ``lr_scheduler_type: constant``, ``warmup_steps: 100``.

Fix
    Use ``constant_with_warmup``.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "warning"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec = subject.spec
    warmup_key = spec.key("warmup")
    configured = (spec.warmup_steps or 0) > 0 or (spec.warmup_ratio or 0) > 0
    name = spec.scheduler.name
    twin = spec.scheduler.family.with_warmup.get(name)  # its family's scheduler that takes the warmup
    if twin is None or not warmup_key or not configured:
        return
    yield Hit(
        message=(
            f"lr_scheduler_type {name} ignores {warmup_key}: the scheduler is built without warmup, "
            "so step 1 runs at the full learning rate"
        ),
        hint=f"use lr_scheduler_type: {twin}",
        location=at_key(subject, warmup_key),
    )
