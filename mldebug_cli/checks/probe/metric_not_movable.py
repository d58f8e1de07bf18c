"""Metric not movable: the user's own metric (``--metric FILE:FUNCTION``) gets no gradient from any trainable
parameter.

What it finds
    The appendix's second question asked of the user's own metric: d(metric)/d(param) over every trainable tensor,
    per parameter group (a layer's attention or MLP, the embedding, the head). It fires when that gradient is
    missing or exactly zero everywhere: no trainable parameter can move the metric directly. The per-group norms
    are in the report's details (``probe.metric``) whichever way it reads.

Why it matters for training
    A metric computed through a step without a gradient (``argmax`` accuracy, a comparison, an integer count,
    ``.detach()``), or from modules that are all frozen, never moves because the loss pushes it: it can only move
    as a side effect of what the loss does train. Watching it for "the loss is still pushing" reads a flat line
    that says nothing about the run.

Example
    ``metric metrics.py:argmax_accuracy (value 0): d(metric)/d(param) is 0 on all 8 trainable tensors (4 groups):
    no trainable parameter moves it directly``.

Fix
    Probe and train a differentiable proxy of the metric (the answer tokens' log-probability, a soft accuracy
    from the softmax) and keep the metric itself for evaluation; or make trainable the modules the metric is
    computed from.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "warning"
SUBJECT = "probe"


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    metric = subject.metric
    if metric is None or not metric.finite or metric.grad_norm:
        return
    how = "no gradient reaches" if metric.grad_norm is None else "d(metric)/d(param) is 0 on"
    yield Hit(
        message=f"metric {metric.source} (value {fmt(metric.value)}): {how} all {metric.tensors} trainable tensors "
                f"({len(metric.groups)} groups): no trainable parameter moves it directly",
        hint="probe a differentiable proxy (the answer tokens' log-prob, a softmax-weighted accuracy) and keep this "
             "metric for evaluation, or train the modules it is computed from",
        location=subject.location(),
    )
