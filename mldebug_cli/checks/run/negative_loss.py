"""Negative loss: a cross-entropy loss below 0.

What it finds
    Logged train or eval losses below -1e-6 in SFT, preference and reward-modelling runs (their losses
    are cross-entropies or -log σ, never negative). GRPO/RLOO runs are skipped: a policy-gradient loss is
    legitimately negative. When no value is below -0.01 the finding is info: that is fp16/bf16 rounding
    of a loss that has reached about 0 (the model memorised its data).

Why it matters for training
    A negative cross-entropy is impossible: the loss function is not what the run thinks (a custom
    ``compute_loss`` returning a log-likelihood instead of its negative, an auxiliary term with the wrong
    sign, a reward added to the loss), so the optimizer is pushing the wrong way.

Example
    ``steps 50-120: loss below 0 at 8 logged points (min -0.41)``.

Fix
    Check the custom loss or the auxiliary terms (MoE ``aux_loss``, z-loss, reward terms) and their signs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, points_where, share
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"below": -1e-6, "rounding": -0.01}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if is_rl(subject):
        return
    for key in ("loss", "eval_loss"):
        series = subject.get(key)
        if series is None:
            continue
        below = points_where(series, lambda v: v < ctx.limit("below"))
        if not below:
            continue
        lowest = min(series.values[i] for i in below)
        rounding = lowest >= ctx.limit("rounding")
        yield hit(subject, series, below[0], below[-1],
                  f"{key} below 0 {share(below, series)} (min {fmt(lowest)})"
                  + ("; tiny: rounding of a loss near 0 (the model memorised its data)" if rounding else ""),
                  "a loss at 0 means memorisation: fewer epochs or more data" if rounding else
                  "check the custom compute_loss and auxiliary loss terms for a flipped sign",
                  Severity.INFO if rounding else None)
