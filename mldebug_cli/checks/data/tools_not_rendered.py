"""What it finds
A row that carries tool definitions (`tools`) while the rendered prompt is the same with and without
them: the chat template ignores the `tools` variable.

Why it matters for training
The model is trained to call functions it was never shown, so at inference (where the server does
pass the tool list, in its own format) it has learned nothing about reading tool definitions.

Example
Phi-3's template has no `tools` block: the JSON tool list of LLaMA-Factory's glaive demo never
reaches the tokens.

Fix
Use a template that renders `tools`, or put the tool definitions into the system message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import plural
from mldebug_cli.render.chat import TemplateRenderError

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    tools = getattr(row.sample, "tools", None)
    if not row.ok or not row.text or not tools or setup.render is None:
        return
    try:
        without_tools = setup.render(row.messages, None)
    except TemplateRenderError:
        return
    if without_tools == row.text:
        names = [n for n in map(_name, tools) if n]
        yield Hit(
            f"the rendered prompt is the same without the {plural(len(tools), 'tool definition')} ({', '.join(map(repr, names[:3]))}):"
            " the template ignores tools",
            "use a chat template that renders tools, or describe them in the system message",
            row.location(),
        )


def _name(tool) -> str | None:
    if not isinstance(tool, dict):
        return None
    function = tool.get("function", tool)
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else None
