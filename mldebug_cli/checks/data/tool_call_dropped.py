"""What it finds
An assistant tool call (its function name) that does not appear in the rendered prompt: the chat
template renders only `content` and silently drops `tool_calls`.

Why it matters for training
The turn that should teach the model to call a tool trains it to answer with an empty reply (or
only the end-of-turn token) instead; tool use is never learned.

Example
Phi-3's template renders `message['content']` only: every `function_call` turn of LLaMA-Factory's
glaive demo becomes `<|assistant|>\n<|end|>`.

Fix
Use a template that renders `tool_calls` (or convert tool calls into the content format your
template expects).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import tool_calls
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.text:
        return
    for i, function in tool_calls(row.messages):
        name = function.get("name")
        if isinstance(name, str) and name and name not in row.text:
            yield Hit(
                f"the tool call to {name!r} does not appear in the rendered prompt: the template drops tool_calls",
                "use a chat template that renders tool_calls",
                row.location(i),
            )
            return
