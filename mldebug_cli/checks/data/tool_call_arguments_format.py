"""What it finds
A tool call whose `arguments` is a JSON string where the template expects a mapping (it renders as a
double-escaped string: `"{\"city\": \"Paris\"}"`), or a mapping where the template expects a string
(it renders as a Python dict: `{'city': 'Paris'}`).

Why it matters for training
The model learns to emit tool calls in a format no parser accepts, while inference (where the
server formats arguments correctly) shows it something else.

Example
OpenAI-style exports keep `arguments` as a string; Qwen's template applies `| tojson` to it.

Fix
Convert `arguments` to the type the template expects (`json.loads` for templates that apply
`tojson`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import tool_calls
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.text:
        return
    for i, function in tool_calls(row.messages):
        problem = _problem(function.get("arguments"), row.text)
        if problem:
            yield Hit(f"tool-call arguments {problem}",
                      "store arguments as the type the template expects (a mapping for templates using tojson)",
                      row.location(i))
            return


def _problem(arguments, text: str) -> str | None:
    encoded_again = isinstance(arguments, str) and arguments.strip().startswith(("{", "[")) and (
        json.dumps(arguments, ensure_ascii=False) in text or json.dumps(arguments) in text
    )
    if encoded_again:
        return "are a JSON string that the template encodes again (double-escaped JSON)"
    if isinstance(arguments, dict) and arguments and repr(arguments) in text:
        return "are a mapping that the template prints as a Python dict"
    return None
