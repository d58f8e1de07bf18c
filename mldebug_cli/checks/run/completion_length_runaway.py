"""Completion length runaway: the mean completion length climbs toward the maximum while the reward is flat.

What it finds
    GRPO/RLOO runs with at least 8 logged points where the mean completion length of the last quarter is
    at least 1.5× that of the first quarter, rose at most logged points, ends at 80 % or more of the
    maximum (``max_completion_length`` from ``--config``, else the largest ``completions/max_length``),
    while the mean reward moved less than 5 % between the two quarters (axolotl's guide: a mean length
    rising monotonically to the max suggests reward hacking).

Why it matters for training
    Longer answers that do not score better mean the policy found a length-correlated reward (or a
    length-normalised loss rewarding length) instead of the task; it ends clipped (RN024).

Example
    ``steps 10-400: mean completion length 180 -> 495 (max 512) while reward stayed 0.41 -> 0.42``.

Fix
    Use a length-neutral loss (``loss_type`` dr_grpo or dapo), add a length penalty or format reward,
    check the reward function for length bias.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_points": 8, "growth": 1.5, "rising_share": 0.6, "near_max": 0.8, "flat_reward": 0.05}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    length, reward = subject.get("completions/mean_length"), subject.get("reward")
    if length is None or reward is None or not is_rl(subject) or len(length) < ctx.limit("min_points"):
        return
    values = length.values
    quarter = max(2, len(values) // 4)
    first, last = mean(values[:quarter]), mean(values[-quarter:])
    if not first or last < ctx.limit("growth") * first:
        return
    rising = sum(1 for a, b in zip(values, values[1:]) if b > a) / (len(values) - 1)
    maximum = ctx.config_value("max_completion_length")
    if not isinstance(maximum, (int, float)):
        top = subject.get("completions/max_length")
        maximum = max(top.values) if top is not None else None
    if rising < ctx.limit("rising_share") or not maximum or last < ctx.limit("near_max") * maximum:
        return
    rq = max(2, len(reward) // 4)
    r_first, r_last = mean(reward.values[:rq]), mean(reward.values[-rq:])
    scale = max(abs(r_first), abs(r_last), 1e-9)
    if abs(r_last - r_first) / scale > ctx.limit("flat_reward"):
        return
    yield hit(subject, length, 0, len(values) - 1,
              f"mean completion length {fmt(first)} -> {fmt(last)} (max {fmt(maximum)}) while reward stayed "
              f"{fmt(r_first)} -> {fmt(r_last)}",
              "use a length-neutral loss_type (dr_grpo, dapo), add a length penalty, check the reward for length bias")
