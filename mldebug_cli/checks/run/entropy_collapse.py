"""Entropy collapse: in an RL run the policy's entropy falls below 0.01.

What it finds
    GRPO/RLOO runs whose logged ``entropy`` (mean per-token entropy of the completions, TRL >= 0.21) drops
    below 0.01 nats (axolotl's guide: 0.05-0.5 healthy, below 0.01 collapse).

Why it matters for training
    Near-zero entropy means the policy samples the same tokens every time: the completions of a group
    are identical, rewards stop varying (RN021) and learning stops: mode collapse.

Example
    ``steps 300-420: entropy below 0.01 at 12 logged points (min 0.002; it started at 0.31)``.

Fix
    Lower the learning rate, raise the sampling temperature, use an entropy bonus or TRL's adaptive
    entropy control (``use_adaptive_entropy``, ``entropy_target``), or stop at an earlier checkpoint.
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
THRESHOLDS = {"min_entropy": 0.01}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    entropy = subject.get("entropy")
    if entropy is None or not is_rl(subject):
        return
    low = points_where(entropy, lambda v: v < ctx.limit("min_entropy"))
    if low:
        yield hit(subject, entropy, low[0], low[-1],
                  f"entropy below {ctx.limit('min_entropy'):g} {share(low, entropy)} "
                  f"(min {fmt(min(entropy.values[i] for i in low))}; it started at {fmt(entropy.values[0])})",
                  "lower the LR, raise the temperature, use an entropy bonus (use_adaptive_entropy) or keep an "
                  "earlier checkpoint")
