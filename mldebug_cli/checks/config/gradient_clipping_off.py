"""Gradient clipping is off: ``max_grad_norm`` is 0 (or below).

What it finds
    A config whose ``max_grad_norm`` is 0 or negative. The Trainer (transformers 5.24 ``Trainer._inner_training_loop``,
    and TRL's, axolotl's and LLaMA-Factory's trainers on it) clips the gradient only when ``max_grad_norm > 0``,
    so the value turns clipping off; the default is 1.0. axolotl passes the key on whenever it is set, 0 included.

Why it matters for training
    Without clipping, one batch with a huge gradient (a malformed or very long row, an fp16 overflow) moves the
    weights as far as its gradient says: the loss spikes and may not recover. axolotl's training-stability guide
    (https://docs.axolotl.ai/docs/training_stability.html, "Gradient Norm Instability") gives
    ``max_grad_norm: 1.0`` as the first fix for a wild gradient norm.

Example
    ``max_grad_norm: 0`` in an SFT config: the grad norm is still logged, but never bounded.

Fix
    Set ``max_grad_norm: 1.0`` (or remove the key to get the default 1.0).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "warning"
SUBJECT = "config"


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.stability.max_grad_norm > 0:
        return
    yield Hit(
        message=f"max_grad_norm is {facts.stability.max_grad_norm:g}: the {facts.framework} trainer clips only above 0, "
                "so gradient clipping is off and one bad batch can move the weights without bound",
        hint="set max_grad_norm: 1.0 (the default) unless the run is meant to train unclipped",
        location=at_setting(review, "max_grad_norm", "max_grad_norm"),
    )
