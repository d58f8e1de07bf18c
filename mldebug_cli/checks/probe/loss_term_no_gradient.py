"""Loss term without gradient: a user's own loss term (``--loss-term FILE:FUNCTION``) reaches no trainable parameter.

What it finds
    The user's term is added to the trainer's terms (weight 1) and measured like them: its gradient on the
    trainable parameters, its cosine with each other term (GP004) and its size against them (GP005). This check
    fires when that gradient is exactly zero or missing: the term does not depend on anything the run trains.

Why it matters for training
    A penalty or auxiliary loss built from ``argmax`` ids, a ``.detach()``-ed value, ``.item()`` or integer
    counts adds to the logged loss but never to the gradient: the run optimises exactly what it would without it,
    and the term's curve moves only as a side effect.

Example
    ``loss term penalties.py:length_penalty (value 3.2): gradient norm 0 on 8 trainable tensors: adding it changes
    nothing the optimizer sees``.

Fix
    Compute the term from ``outputs.logits`` through differentiable operations (log-softmax, a softmax-weighted
    count) instead of ids or detached values.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "error"
SUBJECT = "probe"


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    for term in subject.terms:
        if term.source is None or term.grad_norm:
            continue
        value = term.losses[0] if term.losses else None
        yield Hit(
            message=f"loss term {term.source} (value {fmt(value)}): gradient norm 0 on {len(subject.tensors)} "
                    "trainable tensors: adding it changes nothing the optimizer sees",
            hint="compute it from outputs.logits through differentiable operations (log-softmax, a softmax-weighted "
                 "count), not from argmax ids, .item() or detached values",
            location=subject.location(),
        )
