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
        if m.get("role") in ("assistant", "user") and _empty(m.get("content")) and not m.get("tool_calls")
    ]
    if empty:
        roles = ", ".join(f"{i} ({row.messages[i]['role']})" for i in empty)
        yield Hit(f"empty content in message {roles}", "drop or fill empty turns", row.location(empty[0]))


def _empty(content) -> bool:
    """No text to train: an empty string, or parts none of which holds text (``text``, or LLaMA-Factory's
    ``value``) or anything else (an image)."""
    if not isinstance(content, list):
        return not content_text(content).strip()
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") not in (None, "text"):
            return False
        text = part.get("text", part.get("value"))
        if isinstance(text, str) and text.strip():
            return False
    return True
