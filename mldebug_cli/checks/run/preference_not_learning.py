"""Preference not learning: a DPO loss stays at ln 2 (0.693) after warmup.

What it finds
    DPO runs (not ORPO, whose loss adds an SFT term) with at least 5 logged losses after warmup of which
    80 % lie within 0.02 of ln 2 = 0.6931.

Why it matters for training
    DPO's loss is -log σ(β·(policy - reference log-ratio margin)); at ln 2 the margin is 0: the policy
    equals the reference (TRL logs exactly 0.6931 at step 0). Staying there means no update reaches the
    policy: an LR of 0 or far too small, frozen or missing adapters, a reference that is the policy
    itself (peft adapters disabled for both), or a ``beta`` so small the logits never move.

Example
    ``steps 10-300: loss within 0.02 of ln 2 at 29 of 30 logged points after warmup (mean 0.6929)``.

Fix
    Check the learning rate and that adapters are trainable; raise ``beta`` or the LR.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import after, fmt, hit, mean, share, warmup_end_step

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"tolerance": 0.02, "share": 0.8, "min_points": 5}
LN2 = math.log(2)


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss = subject.get("loss")
    if loss is None or subject.preference_loss != "dpo":
        return
    start = after(loss, warmup_end_step(subject) + 1)
    values = [v for v in loss.values[start:] if math.isfinite(v)]
    if len(values) < ctx.limit("min_points"):
        return
    near = [v for v in values if abs(v - LN2) <= ctx.limit("tolerance")]
    if len(near) >= ctx.limit("share") * len(values):
        yield hit(subject, loss, start, len(loss) - 1,
                  f"loss within {ctx.limit('tolerance'):g} of ln 2 {share(near, values)} "
                  f"after warmup (mean {fmt(mean(values))}): the policy has not moved from the reference",
                  f"check {ctx.config_key('learning_rate')} and that adapters are trainable; raise beta or the LR")
