"""What it finds
Assistant-only training is intended (`--train-on assistant|last`) but trained labels cover the
content of system, user or tool messages.

Why it matters for training
The model learns to write the user's side of the conversation (and to continue past its own turn),
and the loss is diluted by prompt tokens you meant to mask.

Example
A training template whose `{% generation %}` block wraps the whole message loop instead of each
assistant reply.

Fix
Move the generation markers around the assistant reply only, or fix the role mapping.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or setup.train_on not in ("assistant", "last") or row.layout is None or not row.layout.trained_spans:
        return
    cursor = 0
    for i, message in enumerate(row.messages):
        content = content_text(message.get("content")).strip()
        if not content:
            continue
        at = row.text.find(content, cursor)
        if at < 0:
            continue
        end = at + len(content)
        cursor = end
        if message.get("role") == "assistant":
            continue
        if any(s < end and e > at for s, e in row.layout.trained_spans):
            yield Hit(
                f"trained labels cover this {message.get('role')} message, though only assistant turns should be trained",
                "check where the template's generation markers sit, and the role mapping",
                row.location(i),
            )
            return
