"""Optimizer inertia: the checkpoint's optimizer state resists the current gradient.

What it finds
    From the checkpoint's ``optimizer.pt`` (matched to the trainable parameters as the Trainer groups them): the
    cosine between Adam's first moment ``exp_avg`` and the current gradient (fires below ``cosine_below``,
    default -0.2), and Adam's step for this gradient relative to a fresh optimizer's, the median RMS of
    g/(sqrt(v̂)+ε) (fires below ``step_ratio_below``, default 0.05: the second moment makes the step tiny).

Why it matters for training
    A resumed run, or a run started from another run's checkpoint with its optimizer, keeps moving the way the
    old objective pushed for 1/(1-β1) ≈ 10 steps, and a second moment built on large gradients divides the new,
    smaller ones into nothing for 1/(1-β2) ≈ 1000 steps: the metric does not move although the gradient is fine.

Example
    ``exp_avg points against the current gradient: cosine -0.982 (tensors holding 100% of the elements point
    against it), checkpoint step 4``.

Fix
    Do not resume the optimizer across objectives (load the weights only, or delete ``optimizer.pt``); warm up the
    LR again; lower ``adam_beta2`` if the second moment is stale.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "warning"
SUBJECT = "probe"
THRESHOLDS = {"cosine_below": -0.2, "step_ratio_below": 0.05}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    state = subject.optimizer
    if state is None:
        return
    where = subject.location("optimizer")
    hint = "load the weights without optimizer.pt (a new objective needs a fresh optimizer) and warm the LR up again"
    step = f", checkpoint step {state.step}" if state.step is not None else ""
    if math.isfinite(state.cosine) and state.cosine < ctx.limit("cosine_below"):
        yield Hit(message=f"exp_avg points against the current gradient: cosine {fmt(state.cosine)} "
                          f"(tensors holding {fmt(100 * state.against_share)}% of the elements point against it){step}",
                  hint=hint, location=where)
    if math.isfinite(state.step_ratio) and state.step_ratio < ctx.limit("step_ratio_below"):
        yield Hit(message=f"the second moment makes Adam's step {fmt(state.step_ratio)} of a fresh optimizer's "
                          f"(median over {state.tensors} tensors){step}",
                  hint=hint, location=where)
