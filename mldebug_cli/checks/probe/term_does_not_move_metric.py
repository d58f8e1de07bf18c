"""Term does not move metric: with ``--steps K --ablate TERM``, the term's metric ends the same with the term off.

What it finds
    The probe trains K steps on the probed rows with every term, then K steps from the same weights and seed
    with TERM's coefficient at 0, and compares how far TERM's own metric moved each way. It fires when the two
    moves differ by less than ``same_within`` (default 0.1) of the larger move.

Why it matters for training
    The empirical check of the gradient chain: if the metric ends in the same place without the term, the term
    is not what moves it (its gradient never reaches the parameters that matter, another term does the work, or
    its coefficient is too small to count). Together with GP001-GP003 it places the run on the map: a
    structural ceiling, or a term that helps but converges to the same basin.

Example
    ``sft: chosen label probability moved +0.0021 in 4 steps with the term and +0.0021 without``.

Fix
    Raise the term's coefficient, or drop it (it costs compute and does nothing); if the metric must move, change
    what is trainable (GP002, GP003) rather than the loss.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "info"
SUBJECT = "probe"
THRESHOLDS = {"same_within": 0.1}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    ablation = subject.ablation
    if ablation is None:
        return
    moved_with = ablation.with_term - ablation.start
    moved_without = ablation.without_term - ablation.start
    larger = max(abs(moved_with), abs(moved_without))
    if abs(moved_with - moved_without) > ctx.limit("same_within") * larger:
        return
    yield Hit(
        message=f"{ablation.term}: {ablation.metric} moved {moved_with:+.3g} in {ablation.steps} steps with the term "
                f"and {moved_without:+.3g} without: the term does not move it",
        hint=f"raise the term's coefficient or drop it ({subject.key('loss_weights' if subject.task == 'dpo' else 'beta')})",
        location=subject.location("loss_weights" if subject.task == "dpo" else "beta"),
    )
