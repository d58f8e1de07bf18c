"""EBFT: alignment, diversity or the CFM loss outside the guide's healthy range at the end of the run.

What it finds
    axolotl EBFT runs (they log ``ebft/alignment``, ``ebft/diversity``, ``ebft/cfm_loss``) whose last logged values
    are outside the ranges of axolotl's training-stability guide (https://docs.axolotl.ai/docs/training_stability.html,
    "EBFT-Specific Metrics"): ``ebft/alignment`` below 0.3 (healthy 0.3-0.9, trending up), ``ebft/diversity``
    above 1.0 ("indicates mode collapse"; healthy 0.01-0.1), ``ebft/cfm_loss`` at 10 or more (should trend down,
    below 10). The mean of the last 10% of points (at least 3) is judged, so one noisy step does not fire.

Why it matters for training
    These are EBFT's own health signals: without them an EBFT run reads as plain SFT (its loss alone says
    nothing of the feature alignment EBFT optimises).

Example
    ``ebft/diversity`` climbing to 1.6 over the last 50 steps.

Fix
    For collapse, lower the learning rate and check the generation temperature; for a low alignment or a CFM loss
    that does not fall, check the feature network and the data the run was given (axolotl's EBFT docs).
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
THRESHOLDS = {"min_alignment": 0.3, "max_diversity": 1.0, "max_cfm_loss": 10.0, "tail_share": 0.1, "min_tail": 3}
# metric -> (threshold name, True when the bad side is above, what it means)
_METRICS = {
    "ebft/alignment": ("min_alignment", False, "the features do not align (healthy 0.3-0.9, trending up)"),
    "ebft/diversity": ("max_diversity", True, "mode collapse (healthy 0.01-0.1)"),
    "ebft/cfm_loss": ("max_cfm_loss", True, "the CFM loss is not coming down (should fall below 10)"),
}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    for key, (limit_name, above, meaning) in _METRICS.items():
        series = subject.get(key)
        if series is None:
            continue
        finite = [i for i, v in enumerate(series.values) if v == v and abs(v) != float("inf")]
        tail = finite[-max(int(ctx.limit("min_tail")), int(len(finite) * ctx.limit("tail_share"))):]
        if len(tail) < ctx.limit("min_tail"):
            continue
        level, limit = mean(series.values[i] for i in tail), ctx.limit(limit_name)
        if (level >= limit) if above else (level < limit):
            yield hit(subject, series, tail[0], tail[-1],
                      f"{key} averages {fmt(level)} over its last {len(tail)} logged points "
                      f"({'at or above' if above else 'below'} {limit:g}): {meaning}",
                      "lower the learning rate and check the generation temperature for collapse; check the feature "
                      "network and data when alignment stays low or the CFM loss does not fall")
