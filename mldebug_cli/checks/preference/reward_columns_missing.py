"""What it finds
Rows without a column the reward functions read (given with `--reward-columns`, e.g. `answer`).

Why it matters for training
GRPOTrainer passes every extra column to the reward functions as keyword arguments; a missing column makes the
reward function raise mid-run, or (with `kwargs.get`) score every completion of those prompts as wrong, so their
advantages are zero and they teach nothing.

Example
`--reward-columns answer` on rows `{"prompt": [...]}` with no `answer`.

Fix
Add the column to every row, or name the column the reward function really reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import PreferenceDataset, PreferenceSetup

SEVERITY = "error"
SUBJECT = "preference-dataset"


def run(dataset: PreferenceDataset, setup: PreferenceSetup) -> Iterator[Hit]:
    for column, missing in dataset.missing_columns.items():
        yield Hit(f"{missing.rows} row(s) have no {column!r} column for the reward functions (first: row {missing.first})",
                  f"add {column!r} to every row", Location(path=setup.dataset_path, row=missing.first))
