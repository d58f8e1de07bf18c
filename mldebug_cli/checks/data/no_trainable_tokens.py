"""What it finds
A row whose labels are all -100 after masking and truncation: the row contributes no loss (0, or
NaN when a whole batch is like this). The message names the cause when it can: truncation cut every
trained token, masking matched no assistant turn, or the assistant turns are empty.

Why it matters for training
Such rows cost compute and teach nothing; a dataset of them trains a model that learned nothing
while the loss curve looks calm.

Example
`--train-on assistant` on a ShareGPT row whose replies are tagged `bot`, not `gpt`: no turn is an
assistant turn, every label is -100.

Fix
Map the roles (`roles_to_train`, ShareGPT role mapping), raise the max length, or drop the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import dropped_note
from mldebug_cli.core.errors import SETTING_MAX_LENGTH
from mldebug_cli.core.findings import Hit
from mldebug_cli.sources.row_formats import Chat, Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.input_ids or row.trained:
        return
    cut = row.trained_before_truncation or (row.dropped and row.dropped_by == "nothing-trained")
    yield Hit(f"all {len(row.labels)} labels are -100: {_cause(row, setup)}{dropped_note(row, setup)}", _hint(row, setup),
              row.location(), setting=SETTING_MAX_LENGTH if cut else None)


def _cause(row, setup) -> str:
    if row.trained_before_truncation:
        return (f"truncation to {setup.max_length} tokens removed all {row.trained_before_truncation} trained tokens"
                f" (the prompt is {row.first_trained} tokens)")
    if isinstance(row.sample, Tokens):
        return "the row's own labels train nothing"
    if row.untrained_cause is not None:
        return row.untrained_cause[0]
    if isinstance(row.sample, Chat):
        assistants = [m for m in row.sample.messages if m.get("role") == "assistant"]
        if assistants and all(not str(m.get("content") or "").strip() and not m.get("tool_calls") for m in assistants):
            return "every assistant turn is empty"
        if row.layout and row.layout.method == "generation-markers":
            return "the template's {% generation %} blocks cover no token"
        if row.layout and not any(t.trained for t in row.layout.turns):
            return "masking matched no assistant turn"
    return "masking left no token trained"


def _hint(row, setup) -> str:
    if row.trained_before_truncation:
        return "raise the max length, or drop rows whose prompt fills it"
    if row.untrained_cause is not None:
        return row.untrained_cause[1]
    return "check the role mapping and --train-on; an all-masked row adds no loss"
