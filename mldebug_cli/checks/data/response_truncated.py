"""What it finds
A row where truncation to the max length removes trained tokens while some remain: the answer is
cut off. The message says how many trained tokens are lost and whether the end-of-turn token went
with them. Truncation follows the trainer: TRL and transformers keep the first tokens, LLaMA-Factory
splits the length between each prompt and its response, axolotl drops rows that are too long (then
the message says the row is left out).

Why it matters for training
The model is trained on answers that stop mid-sentence without an end-of-turn token, which teaches
it to trail off, and the cut content is never learned.

Example
A 3,000-token conversation with `max_length: 2048`: the last answer loses 900 trained tokens.

Fix
Raise the max length, drop or split long rows, or use a truncation mode that keeps the end.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.render.labels import IGNORE_INDEX

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if row.ok and row.dropped and row.dropped_by == "length":
        yield Hit(
            f"the row is {row.full_length} tokens, longer than the max length {setup.max_length}:"
            f" {setup.framework} leaves it out of training (excess_length_strategy: drop)",
            "raise the max length, or split long rows, to keep their training signal",
            row.location(),
        )
        return
    if not row.ok or not row.truncated or not row.trained or row.dropped:
        return
    lost = sum(1 for label in row.cut_labels if label != IGNORE_INDEX)
    if not lost:
        return
    lost_stop = any(label in setup.stop_ids for label in row.cut_labels if label != IGNORE_INDEX)
    yield Hit(
        f"truncation to {setup.max_length} tokens (row is {row.full_length}) removes {lost} of"
        f" {row.trained_before_truncation} trained tokens"
        + ("; the end-of-turn token is lost" if lost_stop else ""),
        "raise the max length, or drop/split rows longer than it",
        row.location(),
    )
