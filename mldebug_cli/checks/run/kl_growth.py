"""KL growth: in an RL run the KL to the reference keeps rising; its rate, and when it would pass 2 at that rate.

What it finds
    GRPO/RLOO/PPO runs that log ``kl`` (at least 10 finite points) whose KL rises (a positive least-squares slope,
    the mean of the last quarter of the points above the first quarter's) fast enough to pass RN023's level of 2
    (axolotl's guide: 0-0.5 healthy, above 2 diverged) within the run: before its ``max_steps``, or before twice the
    steps logged when the log does not say. It reports the rate per 100 steps and the projected step. A KL that rises
    from 0 at the start of an RL run, slower than that, is normal and not reported. No guide or paper gives a healthy
    growth rate, so this is information, never a warning: RN023 warns on the level.

Why it matters for training
    A KL that climbs steadily means the policy is drifting from the reference faster than the penalty holds it; the
    level check fires only once the drift is done. Seeing the rate early lets you raise ``beta`` or lower the LR
    before the text degrades.

Example
    ``kl rose from 0.02 to 0.41 (first and last quarter means) over steps 10-300, 0.13 per 100 steps: at this rate it
    passes 2 (RN023) near step 1,520, within the run's 2,000 steps``.

Fix
    Raise ``beta`` or lower the learning rate before the KL gets there.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "info"
SUBJECT = "run"
THRESHOLDS = {"min_points": 10, "level": 2.0}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    kl = subject.get("kl")
    if kl is None or not is_rl(subject):
        return
    points = [(i, float(kl.steps[i]), v) for i, v in enumerate(kl.values) if math.isfinite(v)]
    if len(points) < ctx.limit("min_points"):
        return
    slope = _slope([(s, v) for _, s, v in points])
    quarter = max(1, len(points) // 4)
    head = sum(v for _, _, v in points[:quarter]) / quarter
    tail = sum(v for _, _, v in points[-quarter:]) / quarter
    if slope <= 0 or tail <= head:
        return
    first, last = points[0], points[-1]
    level = ctx.limit("level")
    if tail >= level:
        return  # already past the level: RN023's warning
    reach = last[1] + (level - tail) / slope
    horizon = _horizon(subject, last[1])
    if reach > horizon:
        return  # rising, but not fast enough to reach the level within the run: the usual start of an RL run
    yield hit(subject, kl, first[0], last[0],
              f"kl rose from {fmt(head)} to {fmt(tail)} (first and last quarter means) over steps {first[1]:,.0f}-"
              f"{last[1]:,.0f}, {fmt(slope * 100)} per 100 steps: at this rate it passes {level:g} (RN023) near step "
              f"{reach:,.0f}, within the run's {horizon:,.0f} steps",
              f"raise {ctx.config_key('beta')} or lower the learning rate before it gets there")


def _horizon(subject: Run, last_step: float) -> float:
    """The run's planned length (``max_steps`` when the log says), else twice the steps logged so far."""
    planned = subject.meta.get("max_steps")
    return float(planned) if isinstance(planned, (int, float)) and planned > last_step else 2 * last_step


def _slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of value over step."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    return 0.0 if var == 0 else sum((x - mean_x) * (y - mean_y) for x, y in points) / var
