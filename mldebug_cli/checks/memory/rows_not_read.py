"""The rows were not read: the estimate takes every sequence at ``max_length``.

What it finds
    ``memory`` could not read the config's dataset (a path outside the working directory and the config's folder
    without ``--allow-outside-paths``, a missing file, a tokenizer it cannot load, ...), so no micro-batch was built
    from real token lengths: every sequence is taken at ``max_length``. The message says why the rows were not read.

Why it matters for training
    Padding to the longest makes the peak the batch holding the longest rows; without the rows the estimate can
    be far above what the data needs (most rows short) or, with no ``max_length``, below it (one row longer than
    the default). A verdict on assumed lengths is not a verdict on the data.

Example
    ``datasets: [{path: /data/chat.jsonl}]`` run from another folder: "the rows were not read: ... points outside
    the working directory and the config's folder (pass --allow-outside-paths to read it)".

Fix
    Pass ``--allow-outside-paths`` (or run from the folder that holds the data), or fix what the message names.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "warning"
SUBJECT = "memory"


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    if review.rows_not_read is None:
        return
    batch = review.batch
    yield Hit(
        message=f"the rows were not read ({review.rows_not_read}): every sequence is taken at max_length, "
                f"{batch.sequences} × {batch.length:,} tokens per micro-batch",
        hint="pass --allow-outside-paths, or fix what stops the rows from being read, for an estimate on the data",
        location=Location(key=review.key("max_length", "max_length")),
    )
