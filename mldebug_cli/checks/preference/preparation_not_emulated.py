"""What it finds
A training config whose trainer prepares preference rows in a way mldebug does not reproduce (LLaMA-Factory's
pairwise and KTO processors are emulated): a LLaMA-Factory template mldebug does not emulate, one of axolotl's
preference dataset strategies (`type: chatml.intel`, `llama3.argilla`, ...), or a target TRL version other than
the 1.16 whose preparation mldebug emulates. Said once per dataset, with what mldebug did instead.

Why it matters for training
The ids and labels shown, and the DP findings on them, are what TRL 1.16 would make of the rows with the
tokenizer's chat template. Where the real trainer formats or cuts the rows otherwise, a row mldebug passes can
still be truncated, mis-templated or dropped in the run, and the reverse.

Example
`type: chatml.intel` in an axolotl DPO config: axolotl writes the prompt and replies with its own ChatML
strings; mldebug inspects the rows' own columns as TRL 1.16 prepares them.

Fix
Nothing to fix in the data. Read the other findings as the TRL 1.16 view of the rows; to check exactly what the
run sees, train with TRL 1.16's trainer on rows in TRL's columns (prompt/chosen/rejected), or compare a few rows
against the framework's own preprocessed dataset.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import PreferenceDataset, PreferenceSetup

SEVERITY = "info"
SUBJECT = "preference-dataset"


def run(dataset: PreferenceDataset, setup: PreferenceSetup) -> Iterator[Hit]:
    for gap in setup.not_emulated:
        yield Hit(gap, "read the other findings as the preparation the report's framework line names",
                  Location(path=setup.dataset_path))
