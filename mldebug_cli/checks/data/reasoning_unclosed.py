"""An assistant turn opens a ``<think>`` block and never closes it.

What it finds
    Assistant message content with a ``<think>`` and no ``</think>`` after it (a trace cut by a generation limit
    or a conversion script, a closing tag misspelt). The raw message is read, before any template.

Why it matters for training
    Templates that split reasoning from the answer on ``</think>`` (Qwen3's, DeepSeek-R1's) find none and render
    the whole turn as the answer, or as reasoning with no answer at all; the model learns turns that never leave
    the thinking block, and at inference it keeps thinking until ``max_new_tokens``.

Example
    ``{"role": "assistant", "content": "<think>\\nLet me add 2 and 2 ... The answer is 4."}``

Fix
    Close the block (``</think>`` before the answer), or drop the rows whose traces were cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import THINK_CLOSE, THINK_OPEN, show
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
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = content_text(message.get("content"))
        start = content.rfind(THINK_OPEN)
        if start >= 0 and content.find(THINK_CLOSE, start) < 0:
            yield Hit(
                f"assistant message {i} opens <think> and never closes it ({len(content) - start:,} characters "
                f"after it, ending {show(content[-30:])})",
                "close the block with </think> before the answer, or drop the row if its trace was cut",
                row.location(i),
            )
            return
