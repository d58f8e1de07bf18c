"""Preference margins tiny: the loss falls while reward margins stay tiny and chosen/rejected move together.

What it finds
    DPO/ORPO runs with at least 8 logged points where the loss of the last quarter is below 80 % of the
    first quarter's, the mean absolute ``rewards/margins`` stays below 0.1 in both, and ``logps/chosen``
    and ``logps/rejected`` changed by nearly the same amount (their gap moved less than 20 % of the chosen
    change).

Why it matters for training
    The falling loss is the SFT (NLL) term learning the chosen answers, not a preference: chosen and
    rejected become likelier together and the model does not learn to prefer one (common in ORPO with a
    small ``beta``/``lambda``, and in DPO with ``rpo_alpha``).

Example
    ``steps 10-330: loss 1.05 -> 0.13 while rewards/margins stayed 0.0016 -> 0.0025 and logps/chosen and
    logps/rejected rose together (+0.91 vs +0.90)``.

Fix
    Raise ``beta`` (ORPO's λ), lower the SFT weight, check chosen and rejected differ in a way the model can
    see.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "info"
SUBJECT = "run"
THRESHOLDS = {"min_points": 8, "loss_drop": 0.8, "max_margin": 0.1, "together": 0.2}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss, margins = subject.get("loss"), subject.get("rewards/margins")
    chosen, rejected = subject.get("logps/chosen"), subject.get("logps/rejected")
    if subject.preference_loss not in ("dpo", "orpo"):
        return
    if loss is None or margins is None or chosen is None or rejected is None:
        return
    if len(loss) < ctx.limit("min_points"):
        return
    q = max(2, len(loss) // 4)
    first_loss, last_loss = mean(loss.values[:q]), mean(loss.values[-q:])
    if not last_loss < ctx.limit("loss_drop") * first_loss:
        return
    m_first, m_last = mean(abs(v) for v in margins.values[:q]), mean(abs(v) for v in margins.values[-q:])
    if m_first >= ctx.limit("max_margin") or m_last >= ctx.limit("max_margin"):
        return
    d_chosen = mean(chosen.values[-q:]) - mean(chosen.values[:q])
    d_rejected = mean(rejected.values[-q:]) - mean(rejected.values[:q])
    if abs(d_chosen) < 1e-9 or abs(d_chosen - d_rejected) > ctx.limit("together") * abs(d_chosen):
        return
    yield hit(subject, loss, 0, len(loss) - 1,
              f"loss {fmt(first_loss)} -> {fmt(last_loss)} while rewards/margins stayed {fmt(m_first)} -> "
              f"{fmt(m_last)} and logps/chosen and logps/rejected moved together ({d_chosen:+.3g} vs "
              f"{d_rejected:+.3g}): the SFT term is doing the learning",
              f"raise {ctx.config_key('beta')} (ORPO's lambda) or lower the SFT weight")
