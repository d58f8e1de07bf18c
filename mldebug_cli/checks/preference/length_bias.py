"""What it finds
A preference set whose chosen replies are systematically longer (or shorter) than the rejected ones: the mean
chosen/rejected completion-token ratio is 1.5 or more (or 1/1.5 or less) and the same side is longer in at least
70% of the pairs (over 20 pairs or more). The summary always reports the ratio.

Why it matters for training
DPO learns whatever separates chosen from rejected most easily; when length does, the policy learns to be
verbose (or terse) instead of better, and the reward margins grow without the answers improving.

Example
chosen replies average 180 tokens, rejected 60: ratio 3.0, chosen longer in 92% of 500 pairs.

Fix
Balance the set by length (subsample, or pair replies of similar length), or use a length-normalised loss.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import PreferenceDataset, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "preference-dataset"
RATIO = 1.5
SHARE = 0.7
MIN_PAIRS = 20


def run(dataset: PreferenceDataset, setup: PreferenceSetup) -> Iterator[Hit]:
    ratio = dataset.length_ratio
    if dataset.pairs < MIN_PAIRS or ratio is None:
        return
    longer = dataset.chosen_longer / dataset.pairs
    if (ratio >= RATIO and longer >= SHARE) or (ratio <= 1 / RATIO and longer <= 1 - SHARE):
        word = "longer" if ratio > 1 else "shorter"
        yield Hit(f"chosen replies are {word} than rejected ones: length ratio {ratio:.2f}, chosen longer in "
                  f"{longer:.0%} of {dataset.pairs} pairs", "balance the pairs by length or use a length-normalised loss",
                  Location(path=setup.dataset_path))
