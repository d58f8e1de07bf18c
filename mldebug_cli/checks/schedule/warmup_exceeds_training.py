"""Warmup as long as training or longer: the peak LR is never reached.

What it finds
    Runs whose warmup step count W is at least the total number of optimizer steps T, for a
    scheduler that warms up. The message gives the highest LR the run actually reaches.

Why it matters for training
    Warmup raises the LR linearly from 0 towards ``learning_rate``; if training ends first, the
    whole run happens at a fraction of the LR you chose, and the decay phase never starts. This
    happens easily when ``warmup_steps`` was sized for a bigger dataset, or when a small dataset,
    large batch or gradient accumulation makes T much smaller than expected.

Example
    ``warmup_steps: 500`` with 1,000 rows, batch 8, accumulation 4 and 3 epochs: T = 96, so the
    LR climbs to 96/500 of its peak and training stops.

Fix
    Size warmup from the real T (``mldebug lr-plot`` prints it), or give ``warmup_steps`` as a
    ratio below 1 (transformers >= 5) / ``warmup_ratio`` (axolotl, older transformers).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key, lr, warmup_share_hint
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    plan, spec = subject.plan, subject.spec
    if not subject.schedule or spec.scheduler.ignores_warmup or plan.warmup_steps < plan.total_steps:
        return
    peak = max(subject.schedule, key=lambda p: p.lr)
    yield Hit(
        message=(
            f"warmup is {plan.warmup_steps} steps but training has {plan.total_steps} optimizer steps: "
            f"the LR never reaches learning_rate {lr(spec.learning_rate)}; the highest LR reached is "
            f"{lr(peak.lr)} ({peak.lr / spec.learning_rate:.0%} of it) at step {peak.step}"
        ),
        hint=f"size warmup from the real step count, e.g. a share such as {warmup_share_hint(subject, 0.05)}",
        location=at_key(subject, spec.key("warmup"), "warmup_steps"),
    )
