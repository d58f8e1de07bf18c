"""A reasoning trace that repeats one sentence over and over.

What it finds
    An assistant turn's reasoning (``reasoning_content``/``thinking``/``reasoning``, or its ``<think>`` block)
    in which one sentence of three words or more, compared without case and spacing, comes back at least 10 times
    and makes up at least 20% of the trace's sentences (thresholds mldebug's own, overridable): a generation loop,
    such as a trace saying "Let me think." 60 times. Interjections ("Wait.", "Hmm.") are not counted: traces use
    them often without looping.

Why it matters for training
    Distilled traces with a loop teach the loop: the fine-tuned model repeats itself until it hits its token limit.
    Such rows usually come from a teacher that ran out of budget and were kept unfiltered.

Example
    ``<think>Let me think. Let me think. Let me think. ...</think>`` (60 times) ``4``

Fix
    Drop or regenerate the rows (filter traces on their repeated n-grams before training).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import reasoning_traces, show
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"
THRESHOLDS = {"min_repeats": 10, "min_share": 0.2, "min_words": 3}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.messages:
        return
    for i, where, trace in reasoning_traces(row.messages):
        sentences = [" ".join(s.lower().split()) for s in _SENTENCE_END.split(trace)]
        sentences = [s for s in sentences if s]
        if not sentences:
            continue
        counted = Counter(s for s in sentences if len(s.split()) >= THRESHOLDS["min_words"])
        if not counted:
            continue
        sentence, count = counted.most_common(1)[0]
        share = count / len(sentences)
        if count >= THRESHOLDS["min_repeats"] and share >= THRESHOLDS["min_share"]:
            yield Hit(
                f"the reasoning of assistant message {i} ({where}) repeats {show(sentence)} {count} times "
                f"({share:.0%} of its {len(sentences)} sentences): a generation loop",
                "drop or regenerate the row; filter traces on repeated sentences before training",
                row.location(i),
            )
            return
