"""Term dominated: one loss term's gradient is orders of magnitude larger than another's.

What it finds
    The gradient norm of each loss term (times its coefficient) on the trainable parameters; it fires when the
    largest is more than ``ratio_above`` (default 100) times another term's.

Why it matters for training
    The smaller term contributes nothing to the update: the run trains on the larger term alone, whatever the
    config says the loss is (an ORPO λ far too small, an SFT weight that swamps the preference term).

Example
    ``nll's gradient is 850x orpo-odds-ratio's (norms 12.1 and 0.0142): orpo-odds-ratio does nothing``.

Fix
    Scale the coefficients so the terms' gradients are within an order of magnitude or two (``loss_weights``,
    ``rpo_alpha``, ORPO's ``beta``), or drop the term that does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.probe.common import ProbeContext, fmt
from mldebug_cli.core.findings import Hit
from mldebug_cli.probe.subject import ProbeSubject

SEVERITY = "info"
SUBJECT = "probe"
THRESHOLDS = {"ratio_above": 100.0}


def run(subject: ProbeSubject, ctx: ProbeContext) -> Iterator[Hit]:
    # a user's term with no gradient at all is GP011's (loss-term-no-gradient), not a dominated one
    terms = [t for t in subject.terms if t.weight != 0 and t.idle is None and (t.source is None or t.grad_norm)]
    if len(terms) < 2:
        return
    large = max(terms, key=lambda t: t.grad_norm)
    for small in terms:
        if small is large or large.grad_norm <= ctx.limit("ratio_above") * small.grad_norm:
            continue
        ratio = large.grad_norm / small.grad_norm if small.grad_norm else float("inf")
        yield Hit(
            message=f"{large.name}'s gradient is {fmt(ratio)}x {small.name}'s (norms {fmt(large.grad_norm)} and "
                    f"{fmt(small.grad_norm)}): {small.name} does nothing",
            hint=f"scale the coefficients ({subject.key(small.key or 'loss_weights')}) so the terms are within two "
                 "orders of magnitude, or drop the term",
            location=subject.location(small.key or "loss_weights"),
        )
