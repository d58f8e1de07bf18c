"""A reasoning turn with no answer after its reasoning.

What it finds
    An assistant turn whose reasoning (a reasoning field, or a closed ``<think>`` block) is followed by no answer:
    the content outside the block is empty or whitespace. Turns that call tools are not reported (the tool call is
    their answer).

Why it matters for training
    The answer is what a reasoning row teaches to deliver; trained on turns that end after thinking, the model
    learns to stop there, and users get a trace and nothing else. Such rows come from a teacher cut at its token
    limit right after ``</think>``, or from a conversion that moved the answer to another field.

Example
    ``{"role": "assistant", "content": "<think>2 and 2 make 4.</think>"}``

Fix
    Restore the answer (check the conversion's field mapping), or drop the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import REASONING_KEYS, THINK_CLOSE, THINK_OPEN
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.messages:
        return
    for i, message in enumerate(row.messages):
        if not isinstance(message, dict) or message.get("role") != "assistant" or message.get("tool_calls"):
            continue
        content = content_text(message.get("content"))
        has_field = any(isinstance(field, str) and field.strip() for field in map(message.get, REASONING_KEYS))
        start, end = content.find(THINK_OPEN), content.rfind(THINK_CLOSE)
        closed = 0 <= start < end
        if not (has_field or closed):
            continue
        answer = content[:start] + content[end + len(THINK_CLOSE):] if closed else content
        if not answer.strip():
            yield Hit(
                f"assistant message {i} has reasoning and no answer after it",
                "restore the answer (check the conversion's field mapping) or drop the row",
                row.location(i),
            )
            return
