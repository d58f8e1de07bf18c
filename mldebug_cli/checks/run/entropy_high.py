"""RL: the policy's entropy stays above 1.0 for the whole run.

What it finds
    GRPO/RL runs whose logged ``entropy`` is above 1.0 at every logged point (at least 10 of them): axolotl's
    training-stability guide (https://docs.axolotl.ai/docs/training_stability.html, "Key Metrics for RL (GRPO)")
    gives 0.05-0.5 as healthy and "> 1.0 suggests the model is not converging". RN022 is the opposite end (below
    0.01, collapse).

Why it matters for training
    An entropy that never comes down means the policy samples nearly at random: the temperature is too high, the
    learning rate too low to move it, or the rewards carry no signal it can follow.

Example
    ``entropy`` between 1.4 and 1.9 from step 1 to 200.

Fix
    Lower the sampling temperature toward 0.8-1.0, check the reward varies across completions (RN021), and that the
    learning rate moves the policy (a loss and KL that stay flat say it does not).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_entropy": 1.0, "min_points": 10}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    entropy = subject.get("entropy")
    if entropy is None or not is_rl(subject):
        return
    values = [v for v in entropy.values if v == v]
    if len(values) < ctx.limit("min_points") or min(values) <= ctx.limit("max_entropy"):
        return
    yield hit(subject, entropy, 0, len(entropy) - 1,
              f"entropy stays above {ctx.limit('max_entropy'):g} at all {len(values)} logged points (lowest "
              f"{fmt(min(values))}): the policy is not converging",
              "lower the sampling temperature toward 0.8-1.0; check the rewards vary across completions (RN021) and "
              "the learning rate moves the policy")
