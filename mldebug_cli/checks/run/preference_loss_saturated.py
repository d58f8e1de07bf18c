"""Preference loss saturated: loss near 0 with huge margins and a vanishing gradient norm.

What it finds
    DPO-style runs whose last quarter of logged points has a mean loss below 0.01, a mean
    ``rewards/margins`` above 10 and (when logged) a mean ``grad_norm`` below 1e-3. ORPO is skipped (its loss
    keeps an SFT term).

Why it matters for training
    -log σ(margin) is 0 once the margins are large: every pair is trivially separable (the rejected
    answers are garbage, truncated or from another domain), so the remaining steps teach nothing and the
    policy may drift to exploit the easy contrast (rejected log-probs run to -1000s).

Example
    ``steps 20-30: loss 0.0001, rewards/margins 142, grad_norm 8e-08``.

Fix
    Use harder rejected answers (same model's samples, near misses), lower ``beta`` or the LR, or stop
    earlier; check the pairs are not swapped or truncated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_loss": 0.01, "min_margin": 10.0, "max_grad_norm": 1e-3}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss, margins = subject.get("loss"), subject.get("rewards/margins")
    if loss is None or margins is None or subject.preference_loss not in ("dpo", "kto"):
        return
    tail = max(1, len(loss) // 4)
    last_loss = mean(loss.values[-tail:])
    last_margin = mean(margins.values[-max(1, len(margins) // 4):])
    grad = subject.get("grad_norm")
    last_grad = mean(grad.values[-max(1, len(grad) // 4):]) if grad is not None else None
    if last_loss >= ctx.limit("max_loss") or last_margin <= ctx.limit("min_margin"):
        return
    if last_grad is not None and not last_grad < ctx.limit("max_grad_norm"):
        return
    grad_text = f", grad_norm {fmt(last_grad)}" if last_grad is not None else ""
    yield hit(subject, loss, len(loss) - tail, len(loss) - 1,
              f"loss {fmt(last_loss)}, rewards/margins {fmt(last_margin)}{grad_text} over the last {tail} logged "
              "points: every pair is trivially separated",
              f"use harder rejected answers, lower {ctx.config_key('beta')} or the LR, or stop earlier")
