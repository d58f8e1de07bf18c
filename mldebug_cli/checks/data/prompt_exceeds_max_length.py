"""What it finds
A row whose prompt alone (everything before the first trained token) reaches the max length, so
nothing of the response survives truncation.

Why it matters for training
The row trains nothing (see no-trainable-tokens) while still costing a full sequence of compute;
many such rows usually mean the max length is far too small for the data.

Example
A retrieval-augmented row with a 5,000-token context and `max_length: 4096`.

Fix
Raise the max length or drop rows whose prompt is longer than it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import dropped_note
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or setup.max_length is None or row.first_trained is None:
        return
    if row.truncated and not row.trained and row.trained_before_truncation:
        yield Hit(
            f"the prompt is {row.first_trained} tokens, max length {setup.max_length}: nothing of the response survives"
            + dropped_note(row, setup),
            "raise the max length or drop rows whose prompt fills it",
            row.location(),
        )
