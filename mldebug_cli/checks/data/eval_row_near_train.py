"""An eval row that is nearly a training row (most of its word 5-grams are a training row's).

What it finds
    A row of the eval set (``--eval-dataset``) whose prompt and reply, normalised as for DS053, share at least 80%
    of their word 5-grams with a training row (the Jaccard similarity of the two 5-gram sets) without being an exact duplicate: the same question with a reworded answer, a
    trailing space turned into a sentence, a number changed. Candidates come from MinHash LSH (datasketch, 128
    permutations) over the eval rows; each candidate's similarity is then computed exactly, so the similarity in the
    message is the real one. Word 5-grams and the 0.8 threshold are those of Lee et al. 2022, "Deduplicating Training
    Data Makes Language Models Better" (their near-duplicate pass); axolotl's training-stability guide gives none.
    Rows shorter than five words are compared whole, so they are near duplicates only when exact (DS053). A
    preference row's words are its prompt, chosen and rejected replies; an image row's images count as one 5-gram
    each (their bytes' digest).

Why it matters for training
    A near copy of a training row is scored on text the model has learned: its eval loss falls with the train loss
    and hides overfitting, as an exact duplicate does, only less visibly.

Example
    eval row 0 "Explain why the sky is blue in two sentences. Rayleigh scattering ..." and training row 12, the same
    with "two" written "2".

Fix
    Drop the eval rows that nearly repeat training rows, or deduplicate near copies (MinHash) before splitting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import show
from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.sources.overlap import EVAL_SIDE

if TYPE_CHECKING:
    from mldebug_cli.sources.overlap import EvalOverlap

SEVERITY = "warning"
SUBJECT = "overlap"
THRESHOLDS = {"min_similarity": 0.8}


def run(overlap: EvalOverlap, ctx: None) -> Iterator[Hit]:
    if overlap.exact or overlap.similarity < THRESHOLDS["min_similarity"]:
        return
    yield Hit(
        f"this eval row {show(overlap.preview)} nearly repeats training {overlap.training_rows} "
        f"of {overlap.train_path} ({overlap.similarity:.0%} of their word 5-grams shared)",
        "drop the eval rows that nearly repeat training rows, or deduplicate near copies (MinHash) before splitting",
        Location(path=overlap.eval_path, row=overlap.eval_row, side=EVAL_SIDE),
    )
