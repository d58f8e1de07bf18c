"""What it finds
A row that does not fit its format: unparseable JSON line, missing role/content keys, content of the
wrong type, an empty conversation, or no assistant turn.

Why it matters for training
Trainers either crash on such rows or skip them silently; either way the dataset is not what you
think it is.

Example
`{"messages": [{"role": "user", "text": "hi"}]}`: the message has no `content`.

Fix
Repair or drop the row; check the converter that produced the file.
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
    if row.problem is not None and row.problem.code == "DS010":
        yield Hit(row.problem.message, "repair or drop the row", row.location(row.problem.message_index))
