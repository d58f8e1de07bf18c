"""What it finds
Pre-tokenized rows whose labels and input ids differ in length, or whose trained labels are not the
input id at the same position. When most trained labels equal the next position's input id, the
labels were shifted already ("pre-shifted"): transformers' causal-LM loss shifts them again.

Why it matters for training
Misaligned labels train the model to predict the wrong token; pre-shifted labels make it predict the
token after next, which looks like learning but produces garbage.

Example
`labels = input_ids[1:] + [-100]` written by a custom preprocessing script.

Fix
Keep `labels` aligned with `input_ids` (same length, same ids, -100 where masked); the model shifts
them itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.row_formats import Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not isinstance(row.sample, Tokens) or row.sample.labels is None:
        return
    ids, labels = row.sample.input_ids, row.sample.labels
    if len(ids) != len(labels):
        yield Hit(f"labels has {len(labels)} entries, input_ids {len(ids)}",
                  "labels must have one entry per input id", row.location())
        return
    trained = [p for p, label in enumerate(labels) if label != IGNORE_INDEX]
    wrong = [p for p in trained if labels[p] != ids[p]]
    if not wrong:
        return
    shifted = sum(1 for p in trained if p + 1 < len(ids) and labels[p] == ids[p + 1])
    if shifted >= len(trained) / 2:
        message = f"labels are pre-shifted: {shifted} of {len(trained)} trained labels equal the next position's input id"
    else:
        message = f"{len(wrong)} of {len(trained)} trained labels differ from the input id at their position (first: {wrong[0]})"
    yield Hit(message, "keep labels aligned with input_ids; the model shifts them itself", row.location())
