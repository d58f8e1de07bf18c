"""No warmup with a large effective batch.

What it finds
    A schedule with no warmup step (and a scheduler that takes one) whose effective batch, micro-batch size x
    gradient accumulation x processes, is 64 sequences or more. The size is mldebug's threshold (overridable), not
    the guide's: axolotl's training-stability guide (https://docs.axolotl.ai/docs/training_stability.html,
    "SFT Stability") names insufficient warmup as a cause of a plateau ("Set warmup_steps to 5--10% of total
    steps") and very large effective batches as an amplifier of spikes ("Loss Spikes > Gradient accumulation
    mismatch"). LR002 reports a missing warmup as info for smaller batches.

Why it matters for training
    The first optimizer steps run at the full learning rate with Adam's second-moment estimate still empty; a large
    batch makes each of those steps count for many rows, so an early spike costs more of the run.

Example
    ``per_device_train_batch_size: 8``, ``gradient_accumulation_steps: 8``, ``--world-size 4``, ``warmup_steps: 0``:
    256 sequences per step, none warmed up.

Fix
    Warm up for 5-10% of the steps (the hint names your framework's key).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key, warmup_share_hint
from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import plural
from mldebug_cli.schedule.model import Simulation

SEVERITY = "warning"
SUBJECT = "schedule"
THRESHOLDS = {"min_effective_batch": 64}


def effective_batch(subject: Simulation) -> int:
    spec = subject.spec
    return spec.batch_size * spec.grad_accum * spec.world_size


def applies(subject: Simulation) -> bool:
    """No warmup where the scheduler takes one, with an effective batch at or above the threshold."""
    plan, spec = subject.plan, subject.spec
    return bool(subject.schedule) and not spec.scheduler.ignores_warmup and plan.total_steps > 0 \
        and plan.warmup_steps == 0 and effective_batch(subject) >= THRESHOLDS["min_effective_batch"]


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    if not applies(subject):
        return
    spec = subject.spec
    yield Hit(
        message=f"no warmup with an effective batch of {plural(effective_batch(subject), 'sequence')} per optimizer "
                f"step ({spec.batch_size} x {spec.grad_accum} accumulation x {spec.world_size} "
                f"{'process' if spec.world_size == 1 else 'processes'}): the first steps run at the full learning rate",
        hint=f"warm up for 5-10% of the steps, e.g. {warmup_share_hint(subject, 0.05)}",
        location=at_key(subject, spec.key("warmup"), "warmup_steps"),
    )
