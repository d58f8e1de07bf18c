"""An eval row that is also a training row (the same prompt and reply).

What it finds
    A row of the eval set (``--eval-dataset``) whose prompt and reply, compared after Unicode NFKC normalisation,
    case folding and collapsing white space, are those of a training row: an exact duplicate across the split.
    A preference row is its prompt and chosen reply (DPO), its prompt and completion (KTO) or its prompt (GRPO); an
    image row adds the bytes of its images, so the same question over another image is another row.
    Every training row is compared (not a sample); the finding names the first training rows that hold it.

Why it matters for training
    The eval loss on a row the model trains on measures memorisation, not generalisation: it falls with the train
    loss, overfitting never shows, and early stopping or checkpoint selection picks the wrong step. mldebug's RN010
    sees the leak only after the run, as an eval loss far below the train loss; this finds it before the first step.
    A split made after an upsampling or a concatenation of overlapping sources is the usual cause.

Example
    eval row 3 ``{"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}]}``
    is training row 17 with different capitalisation.

Fix
    Drop the eval rows found in training (or deduplicate the whole dataset before splitting it).
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


def run(overlap: EvalOverlap, ctx: None) -> Iterator[Hit]:
    if not overlap.exact:
        return
    yield Hit(
        f"this eval row {show(overlap.preview)} is also in the training set (training {overlap.training_rows} "
        f"of {overlap.train_path}): its eval loss measures memorisation",
        "drop the eval rows found in training, or deduplicate the dataset before splitting it",
        Location(path=overlap.eval_path, row=overlap.eval_row, side=EVAL_SIDE),
    )
