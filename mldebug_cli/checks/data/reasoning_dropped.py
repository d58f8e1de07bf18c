"""What it finds
An assistant turn that carries reasoning (`reasoning_content`, `thinking`, or a `<think>` block in its
content) that does not appear in the rendered tokens.

Why it matters for training
You believe you are training a reasoning model on its traces, but the template drops them (e.g.
from every turn before the last user message, or because it ignores `reasoning_content`): the model
learns answers without the reasoning.

Example
Qwen3's template keeps reasoning only after the last user query; Qwen2.5's ignores it entirely.

Fix
Put the reasoning turn last, split multi-turn rows so each trained turn is last, or use a template
that renders reasoning in history.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import show
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"
REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.S)


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.text:
        return
    dropped = []
    for i, message in enumerate(row.messages):
        if message.get("role") != "assistant":
            continue
        reasoning = _reasoning(message)
        if reasoning and reasoning not in row.text:
            dropped.append((i, reasoning))
    if dropped:
        i, reasoning = dropped[0]
        yield Hit(
            f"reasoning of assistant message {', '.join(str(d[0]) for d in dropped)} ({show(reasoning)})"
            " does not appear in the rendered prompt",
            "the template drops reasoning from these turns; put the reasoning turn last or use a template that keeps it",
            row.location(i),
        )


def _reasoning(message) -> str:
    for key in REASONING_KEYS:
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    found = THINK_BLOCK.search(content_text(message.get("content")))
    return found.group(1).strip() if found else ""
