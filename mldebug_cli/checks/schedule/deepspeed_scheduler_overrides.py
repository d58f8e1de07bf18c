"""A DeepSpeed config's scheduler block replaces the configured scheduler.

What it finds
    Runs whose ``deepspeed`` config (file or inline) has a ``scheduler`` block. The HF Trainer
    then builds DeepSpeed's scheduler (WarmupLR, WarmupDecayLR, WarmupCosineLR, ...) and
    ``lr_scheduler_type``/``lr_scheduler_kwargs`` are not used.

Why it matters for training
    The curve you configured (and that ``lr-plot`` draws) is not the one that runs: WarmupLR, for
    example, never decays, and its warmup is log-shaped unless ``warmup_type`` is linear.

Example
    ``lr_scheduler_type: cosine`` with ``deepspeed: ds_z2.json`` containing
    ``"scheduler": {"type": "WarmupLR", ...}``.

Fix
    Remove the ``scheduler`` block from the DeepSpeed config to use the Trainer's scheduler (the
    optimizer block can stay).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "warning"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    block = subject.deepspeed_scheduler
    if block is None:
        return
    spec = subject.spec
    yield Hit(
        message=(
            f"the DeepSpeed config's scheduler block (type {block.get('type', '?')}) replaces the configured "
            f"{spec.scheduler.name} scheduler: the simulated curve is not the one that runs"
        ),
        hint="remove the scheduler block from the DeepSpeed config",
        location=at_key(subject, spec.key("deepspeed"), "deepspeed"),
    )
