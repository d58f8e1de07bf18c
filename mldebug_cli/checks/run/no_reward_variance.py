"""No reward variance: ``reward_std`` is 0 (or ``frac_reward_zero_std`` >= 0.8) on most logged steps.

What it finds
    GRPO/RLOO runs where more than half of the logged points have ``reward_std`` equal to 0, or
    ``frac_reward_zero_std`` of at least 0.8 (axolotl's guide: below 0.8 is healthy; 1.0 every step means
    no gradient).

Why it matters for training
    GRPO's advantage is the reward minus its group mean (divided by the std): when every completion of a
    prompt scores the same, every advantage is 0, the loss is 0 and ``grad_norm`` is 0 (trl#3857). The
    prompts are too easy or too hard for the model, the reward is binary and saturated, or
    ``num_generations`` is too small to see differences.

Example
    ``steps 5-200: frac_reward_zero_std >= 0.8 at 31 of 40 logged points (mean 0.86)``.

Fix
    Raise ``num_generations`` and the sampling temperature, filter prompts the model always or never
    solves, use a graded (partial-credit) reward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, mean, share

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"zero_std_frac": 0.8, "share": 0.5}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not is_rl(subject):
        return
    frac = subject.get("frac_reward_zero_std")
    std = subject.get("reward_std")
    if frac is not None:
        flagged = [i for i, v in enumerate(frac.values) if v >= ctx.limit("zero_std_frac")]
        series, what = frac, f"frac_reward_zero_std >= {ctx.limit('zero_std_frac'):g}"
        detail = f" (mean {fmt(mean(v for v in frac.values if v == v))})"
    elif std is not None:
        flagged = [i for i, v in enumerate(std.values) if v == 0.0]
        series, what, detail = std, "reward_std is 0", ""
    else:
        return
    if flagged and len(flagged) > ctx.limit("share") * len(series):
        yield hit(subject, series, flagged[0], flagged[-1],
                  f"{what} {share(flagged, series)}{detail}: completions of a prompt "
                  "all score alike, so advantages and gradients are 0",
                  f"raise {ctx.config_key('num_generations')} and the temperature, drop prompts the model always or "
                  "never solves, use a graded reward")
