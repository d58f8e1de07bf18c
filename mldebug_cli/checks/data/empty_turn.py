"""What it finds
An assistant or user message whose content is empty or only whitespace (and that carries no tool
call).

Why it matters for training
An empty assistant turn trains the model to answer with nothing but the end-of-turn token; an empty
user turn is usually a conversion bug that shifts the conversation.

Example
`{"role": "assistant", "content": ""}` left behind by a filter that removed refusals.

Fix
Drop the turn (and its prompt) or fill it.
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
    if row.problem is not None:
        return
    empty = [
        i for i, m in enumerate(row.messages)
        if m.get("role") in ("assistant", "user") and not content_text(m.get("content")).strip() and not m.get("tool_calls")
    ]
    if empty:
        roles = ", ".join(f"{i} ({row.messages[i]['role']})" for i in empty)
        yield Hit(f"empty content in message {roles}", "drop or fill empty turns", row.location(empty[0]))
