"""RL: the gradient norm stays below the guide's healthy floor for the whole run.

What it finds
    GRPO/RL runs whose logged ``grad_norm`` is below 0.001 at every logged finite point (at least 10 of them):
    axolotl's training-stability guide (https://docs.axolotl.ai/docs/training_stability.html, "Key Metrics for RL
    (GRPO)") gives 0.001-1.0 as the healthy range of ``grad_norm`` for GRPO; RN004 reads its other end (above 10,
    unstable).

Why it matters for training
    A policy-gradient step is the advantages times the log-probability gradients: when every completion of a prompt
    gets the same reward the advantages are 0 and so is the gradient, and the policy does not move however long the
    run. A norm that never reaches 0.001 says the updates carry almost no signal: rewards without variance within
    groups (RN021), a frozen or detached model, or a loss scaled to nothing.

Example
    ``grad_norm`` between 0 and 0.0004 from step 1 to 200 while ``reward`` stays flat.

Fix
    Give the reward functions partial credit so completions of one prompt score differently (RN021, ``probe
    --rewards``), raise ``num_generations`` and the temperature so groups differ, and check the trainable parameters
    receive a gradient (``probe``: GP002).
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
THRESHOLDS = {"min_grad_norm": 0.001, "min_points": 10}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    norms = subject.get("grad_norm")
    if norms is None or not is_rl(subject):
        return
    values = [v for v in norms.values if v == v and abs(v) != float("inf")]
    if len(values) < ctx.limit("min_points") or max(values) >= ctx.limit("min_grad_norm"):
        return
    yield hit(subject, norms, 0, len(norms) - 1,
              f"grad_norm stays below {ctx.limit('min_grad_norm'):g} at all {len(values)} logged points (highest "
              f"{fmt(max(values))}): the policy updates carry almost no signal",
              "make rewards differ within each prompt's completions (RN021; partial credit, more generations, a "
              "higher temperature) and check the trainable parameters get a gradient (probe, GP002)")
