"""What it finds
A message whose content is a list of parts (LLaMA-Factory's `{"type": "text", "value": ...}`, or any part
the template does not read) that the chat template printed as the list's Python repr
(`[{'type': 'text', 'value': 'hi'}]`) into the rendered row.

Why it matters for training
TRL and transformers' `apply_chat_template` hand the parts to the template as they are; a template that reads
`message['content']` as a string prints the repr, and those tokens are trained: the model learns to answer in
Python lists of dicts. (Other templates raise on any list: Qwen2.5, Qwen3, Mistral-Nemo, DS009. axolotl joins the
parts' text itself; `llamafactory-cli train` 0.9.5 refuses any list, DS010.)

Example
A LLaMA-Factory v1 row under TRL with Llama 3's template: `hi` becomes
`[{'type': 'text', 'value': 'hi'}]` (61 tokens instead of 35), all trained.

Fix
Flatten the parts into a string (or `{"type": "text", "text": ...}` parts for a template that iterates them),
or train the rows with the framework whose reader understands them (LLaMA-Factory).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"
SHOWN = 60  # characters of the repr quoted in the message


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.text:
        return
    printed = [i for i, m in enumerate(row.messages)
               if isinstance(m.get("content"), list) and m["content"] and str(m["content"]) in row.text]
    if not printed:
        return
    shown = str(row.messages[printed[0]]["content"])
    shown = shown if len(shown) <= SHOWN else shown[:SHOWN] + "…"
    yield Hit(
        f"the template printed the content parts of message {', '.join(map(str, printed))} as a Python list "
        f"({shown}): those characters are trained",
        "flatten the parts into a string, or use parts the template reads ({'type': 'text', 'text': ...})",
        row.location(printed[0]),
    )
