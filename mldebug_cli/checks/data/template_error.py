"""What it finds
A row on which the chat template raises (the message carries the template's own error text, e.g.
"Conversation roles must alternate user/assistant/user/assistant/...").

Why it matters for training
Depending on the trainer, the run crashes hours in when it reaches the row, or the row is silently
dropped.

Example
Two consecutive user messages with a Mistral template; a tool call without the 9-character id the
Mistral template requires.

Fix
Repair the row (merge or reorder turns, add the missing fields) or use a template that accepts it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if row.render_error is not None:
        yield Hit(f"the chat template raised: {row.render_error}",
                  "fix the row to fit the template (roles, required fields) or drop it", row.location())
