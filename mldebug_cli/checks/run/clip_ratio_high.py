"""Clip ratio high: in an RL run ``clip_ratio/region_mean`` is above 0.3.

What it finds
    GRPO/RLOO runs whose logged share of tokens with a clipped importance ratio (``clip_ratio/region_mean``,
    or ``clip_ratio`` in older TRL) exceeds 0.3 (axolotl's guide: below 0.1 healthy, above 0.3 too
    aggressive).

Why it matters for training
    The clipping region is PPO's trust region: when a third of the tokens fall outside it, the updates
    are too large for the data reuse (``num_iterations`` > 1, large steps per generation), and those
    tokens contribute no gradient.

Example
    ``steps 40-90: clip_ratio/region_mean above 0.3 at 6 logged points (max 0.44)``.

Fix
    Lower the learning rate, reduce ``num_iterations`` or ``steps_per_generation``, or widen ``epsilon``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, points_where, share

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_clip_ratio": 0.3}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not is_rl(subject):
        return
    series = subject.get("clip_ratio/region_mean") or subject.get("clip_ratio")
    if series is None:
        return
    high = points_where(series, lambda v: v > ctx.limit("max_clip_ratio"))
    if high:
        yield hit(subject, series, high[0], high[-1],
                  f"{series.key} above {ctx.limit('max_clip_ratio'):g} {share(high, series)} "
                  f"(max {fmt(max(series.values[i] for i in high))})",
                  "lower the LR, reduce num_iterations/steps_per_generation, or widen epsilon")
