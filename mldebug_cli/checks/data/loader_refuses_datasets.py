"""What it finds
A config whose datasets the framework's loader cannot merge or split, so the run stops before its first step.
LLaMA-Factory 0.9.5 keeps each dataset's first `max_samples` rows, merges the datasets (`mix_strategy`: concat or
interleave), splits `val_size` off the merged rows, and only then drops the rows its converter emptied (an odd turn
count, turns out of order). It raises when a dataset has no row left beside others (`ValueError: The features can't
be aligned`), when the train or eval split holds no valid row (`RuntimeError: Cannot find valid samples`), when
`val_size` leaves no training row (`train_test_split` raises), and on `interleave_once` with several datasets (the
`datasets` release it allows, <=4.0.0, has no `all_exhausted_without_replacement`).

Why it matters for training
The job fails at start-up, after the model has been downloaded and the GPUs allocated; a cap or a split that
keeps only dropped rows is invisible when each file is checked on its own.

Example
Two ShareGPT datasets and `max_samples: 2`, where the first two rows of one of them have a user turn and no reply:
LLaMA-Factory drops both, that dataset is empty, and merging it with the other raises.

Fix
Fix the dropped rows, raise `max_samples`, lower `val_size`, leave the empty dataset out of `dataset`, or use
`mix_strategy: concat`, `interleave_under` or `interleave_over`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from mldebug_cli.core.findings import Hit, Location

SEVERITY = "error"
SUBJECT = "dataset-merge"


@dataclass(frozen=True)
class MergeRefusal:
    """What the loader raises while it merges or splits the config's datasets (schedule.merging says it)."""

    message: str
    hint: str | None
    config: str


def run(refusal: MergeRefusal, ctx: object) -> Iterator[Hit]:
    yield Hit(f"{refusal.message}: the run stops before training", refusal.hint,
              Location(path=refusal.config))
