"""A few rows far longer than the rest set the memory peak.

What it finds
    With padding to the longest row of a batch, the batch that holds the longest row is as long as that
    row for every sequence in it. When a few rows are much longer than the rest (longer than 2× the
    99th percentile), that batch needs far more memory than a typical one: the message names the rows,
    the step their batch falls on (the Trainer's seeded shuffle, replayed), and how much lower the peak
    would be without them.

Why it matters for training
    The run goes well for hours and runs out of memory at the step where the long row comes up
    (unsloth#1624); a smaller ``max_length`` or dropping those rows fixes it without slowing every step.

Example
    24 rows of 128-512 tokens and one of 2,048, micro-batch 4: step 5 pads 4 sequences to 2,048 tokens.

Fix
    Drop or split the rows named, or set ``max_length`` just above the rest (the truncation findings
    DS007/DS008 show what it would cut), or group by length.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import at_batch, g
from mldebug_cli.core.findings import Hit
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "warning"
SUBJECT = "memory"
THRESHOLDS = {"saving": 0.10}  # the typical batch needs at least this share less than the peak


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    if not review.long_rows or review.typical is None:
        return
    saving = review.peak.per_gpu - review.typical.per_gpu
    if saving < THRESHOLDS["saving"] * review.peak.per_gpu:
        return
    rows = ", ".join(f"{r.row} ({r.length:,} tokens)" for r in review.long_rows[:3])
    more = f" and {len(review.long_rows) - 3} more" if len(review.long_rows) > 3 else ""
    step = f" at step {review.batch.step}" if review.batch.step is not None else ""
    yield Hit(
        message=f"row {rows}{more} set the peak{step}: {g(review.peak.per_gpu)} against {g(review.typical.per_gpu)} "
                f"for a batch of typical length ({review.typical.batch.length:,} tokens)",
        hint=f"drop or split those rows, or lower {review.key('max_length', 'max_length')}: "
             f"the peak falls by about {g(saving)}",
        location=at_batch(review, review.key("max_length", "max_length")),
    )
