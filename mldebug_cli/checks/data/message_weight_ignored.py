"""What it finds
Messages that carry a per-message `loss_weight` (LLaMA-Factory's v1 data format) in rows read by a framework
that never reads it: TRL's SFTTrainer and a bare Trainer's `apply_chat_template` hand role and content to the chat
template, axolotl's chat_template strategy keeps only the keys it maps, and `llamafactory-cli train` 0.9.5's
converter reads role and content (only its v1 data engine reads the weight).

Why it matters for training
A turn weighted 0.0 to keep it out of the loss is trained anyway (or one weighted 1.0 is masked): the weights
the dataset was built with are silently dropped.

Example
`{"role": "user", "content": "hi", "loss_weight": 0.0}` under TRL with `assistant_only_loss` off: the user
turn is trained like every other token.

Fix
Express the weights with the framework's own setting (TRL: `assistant_only_loss`, `completion_only_loss`), or
train with LLaMA-Factory's v1 data engine, which reads them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"
KEY = "loss_weight"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    facts = setup.facts
    if row.problem is not None or facts.reads_message_weights is not False:
        return
    weighted = [(i, m[KEY]) for i, m in enumerate(row.messages) if isinstance(m, dict) and KEY in m]
    if not weighted:
        return
    shown = ", ".join(f"message {i} ({row.messages[i].get('role')}) {w!r}" for i, w in weighted[:4])
    yield Hit(
        f"{KEY} is set on {shown}: {facts.framework} never reads it, so the turns are trained as "
        f"train_on {setup.train_on!r} decides",
        "express the weights with the framework's masking settings, or train with a reader of loss_weight",
        row.location(weighted[0][0]),
    )
