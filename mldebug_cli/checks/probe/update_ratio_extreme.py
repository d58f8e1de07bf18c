"""Update ratio extreme: the update/parameter RMS ratio at the config's LR is far outside ~1e-4…1e-2.

What it finds
    For each trainable tensor, RMS(one optimizer step at the config's learning rate) / RMS(parameter), with the
    current gradient (Adam: the checkpoint's moments when given, else a first step). It fires when the median
    over tensors is below ``ratio_below`` (default 1e-5) or above ``ratio_above`` (default 0.1). Tensors that are
    all zero (LoRA B at the start) have no scale and are left out.

Why it matters for training
    Conditioning: a healthy step changes each weight by about 1e-3 of its size. Far below, nothing moves within
    the run's steps (an LR in the wrong unit, a huge weight decay); far above, each step rewrites the weights and
    the loss spikes or diverges.

Example
    ``median update/parameter RMS 2.1e-08 at learning_rate 1e-10 (adamw_torch, 28 tensors; smallest
    model.layers.0.mlp.up_proj.weight 1.2e-08)``.

Fix
    Set ``learning_rate`` so the ratio lands near 1e-3 (about 1e-3 × the parameters' RMS for Adam).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "warning"
SUBJECT = "probe"
THRESHOLDS = {"ratio_below": 1e-5, "ratio_above": 0.1}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    update = subject.update
    if update is None or not math.isfinite(update.median):
        return
    if update.median < ctx.limit("ratio_below"):
        side, extreme, reading = "smallest", update.smallest, "nothing moves"
    elif update.median > ctx.limit("ratio_above"):
        side, extreme, reading = "largest", update.largest, "each step rewrites the weights"
    else:
        return
    name, value = extreme[0]
    target = f" (about {fmt(update.learning_rate * 1e-3 / update.median)} here)" if update.median > 0 and \
        update.learning_rate > 0 else ""
    yield Hit(
        message=f"median update/parameter RMS {fmt(update.median)} at learning_rate {fmt(update.learning_rate)} "
                f"({update.optimizer}, {update.tensors} tensors; {side} {name} {fmt(value)}): {reading}",
        hint=f"set {subject.key('learning_rate')} so the ratio is near 1e-3{target}",
        location=subject.location("learning_rate"),
    )
