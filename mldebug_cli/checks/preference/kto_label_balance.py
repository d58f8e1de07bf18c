"""What it finds
A KTO set whose labels are all desirable (or all undesirable), or whose minority label is under 10% of the rows.

Why it matters for training
KTO weighs desirable and undesirable examples against each other; TRL 1.16 accepts a set with one label only
(its counts clamp to 1) and trains it anyway: the loss then only pushes one way, like SFT with extra steps.
A strong imbalance needs `desirable_weight`/`undesirable_weight` set to compensate.

Example
1,000 rows with `"label": true` and none false.

Fix
Add undesirable examples (or desirable ones), or set the weights so that weight × count is about equal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import PreferenceDataset, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "preference-dataset"
MINORITY = 0.1


def run(dataset: PreferenceDataset, setup: PreferenceSetup) -> Iterator[Hit]:
    if setup.task != "kto":
        return
    good, bad = dataset.labels[True], dataset.labels[False]
    total = good + bad
    if not total or min(good, bad) / total >= MINORITY:
        return
    yield Hit(f"KTO labels: {good} desirable, {bad} undesirable: "
              + ("only one label, so the loss pushes one way" if not min(good, bad) else "the minority is under 10%"),
              "add rows of the missing label, or set desirable_weight/undesirable_weight",
              Location(path=setup.dataset_path))
