"""Loss terms conflict: two loss terms' gradients on the shared trainable parameters point against each other.

What it finds
    Each loss term's gradient (times its coefficient) on the trainable parameters, computed separately over the
    probed rows; it fires when the cosine between two terms is below ``cosine_below`` (default -0.2) and the
    smaller term's norm is at least ``min_norm_share`` (default 0.05) of the larger's (a tiny term cancels
    nothing).

Why it matters for training
    The third question: is something fighting the metric? Terms whose gradients cancel leave a small sum: ORPO's
    NLL against its odds-ratio term, DPO's sigmoid against an SFT term on the chosen side (``loss_type: [sigmoid,
    sft]``, ``rpo_alpha``), GRPO's policy term against its KL term. The run moves slowly or not at all along
    the direction either term wants.

Example
    ``sigmoid and sft: cosine -0.83 on the shared parameters (norms 0.41 and 0.37)``.

Fix
    Reweigh the terms (``loss_weights``, ``rpo_alpha``, ORPO's ``beta``), or drop the term that works against the
    metric you care about.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "warning"
SUBJECT = "probe"
THRESHOLDS = {"cosine_below": -0.2, "min_norm_share": 0.05}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    for pair in subject.cosines:
        small, large = sorted((pair.first_norm, pair.second_norm))
        if not math.isfinite(pair.cosine) or large == 0 or small < ctx.limit("min_norm_share") * large:
            continue
        if pair.cosine >= ctx.limit("cosine_below"):
            continue
        yield Hit(
            message=f"{pair.first} and {pair.second}: cosine {fmt(pair.cosine)} on the shared parameters (norms "
                    f"{fmt(pair.first_norm)} and {fmt(pair.second_norm)}): the terms cancel",
            hint=f"reweigh the terms ({subject.key('loss_weights' if subject.task == 'dpo' else 'beta')}) or drop "
                 "the one that works against the metric you care about",
            location=subject.location("loss_weights" if subject.task == "dpo" else "beta"),
        )
