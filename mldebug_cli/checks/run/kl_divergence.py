"""KL divergence: in an RL run the KL to the reference model exceeds 2.

What it finds
    GRPO/RLOO/PPO runs whose logged ``kl`` exceeds 2 (axolotl's guide: 0-0.5 healthy, above 2 diverged).
    High already at the first logged step means the reference model is not the starting policy.
    (TRL GRPO logs ``kl`` only when ``beta`` is not 0; the default has been 0 since v0.19.)

Why it matters for training
    The policy has drifted far from the reference: the KL penalty is too weak for the LR, and reward
    hacking or incoherent text usually follows. At the first step, a KL above 2 means the reference was
    loaded differently from the policy (another checkpoint, adapters not merged, another dtype).

Example
    ``steps 400-600: kl above 2 at 9 logged points (max 5.3)``.

Fix
    Raise ``beta`` or lower the LR; at the first step, load the reference from the same weights as the
    policy.
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
THRESHOLDS = {"max_kl": 2.0}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    kl = subject.get("kl")
    if kl is None or not is_rl(subject):
        return
    high = points_where(kl, lambda v: v > ctx.limit("max_kl"))
    if not high:
        return
    top = max(kl.values[i] for i in high)
    if high[0] == 0:
        yield hit(subject, kl, 0, high[-1],
                  f"kl is {fmt(kl.values[0])} at the first logged step (above {ctx.limit('max_kl'):g}; max {fmt(top)}):"
                  " the reference model is not the starting policy",
                  "load the reference from the same weights, adapters and dtype as the policy")
    else:
        yield hit(subject, kl, high[0], high[-1],
                  f"kl above {ctx.limit('max_kl'):g} {share(high, kl)} (max {fmt(top)})",
                  f"raise {ctx.config_key('beta')} or lower the learning rate")
