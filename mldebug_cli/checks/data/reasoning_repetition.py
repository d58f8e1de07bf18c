"""A reasoning trace that repeats one sentence over and over.

What it finds
    An assistant turn's reasoning (``reasoning_content``/``thinking``/``reasoning``, or its ``<think>`` block)
    in which one sentence, or a cycle of two or three sentences, compared without case and spacing, comes back at
    least 10 times in a row (mldebug's threshold, overridable): a generation loop, such as a trace saying "Let me
    think." 60 times. Repeats with other text between them are not loops: a trace that checks a palindrome letter by
    letter says "a vs a: yes." ten times among other sentences (LLaMA-Factory's reason_tool_use demo, row 34).

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
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import reasoning_traces, show
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"
THRESHOLDS = {"min_repeats": 10}
_PERIODS = (1, 2, 3)  # a loop of one sentence, or a cycle of two or three
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.messages:
        return
    for i, where, trace in reasoning_traces(row.messages):
        sentences = [" ".join(s.lower().split()) for s in _SENTENCE_END.split(trace)]
        sentences = [s for s in sentences if s]
        if not sentences:
            continue
        repeats, start, period = _longest_loop(sentences)
        if repeats >= THRESHOLDS["min_repeats"]:
            cycle = " ".join(sentences[start:start + period])
            yield Hit(
                f"the reasoning of assistant message {i} ({where}) repeats {show(cycle)} {repeats} times in a row "
                f"(from sentence {start + 1} of {len(sentences)}): a generation loop",
                "drop or regenerate the row; filter traces on repeated sentences before training",
                row.location(i),
            )
            return


def _longest_loop(sentences: list[str]) -> tuple[int, int, int]:
    """(times repeated in a row, first sentence, period) of the longest run of a sentence or a short cycle."""
    best = (1, 0, 1)
    for period in _PERIODS:
        run = 0
        for pos in range(period, len(sentences) + 1):
            if pos < len(sentences) and sentences[pos] == sentences[pos - period]:
                run += 1
                continue
            repeats = run // period + 1
            if repeats > best[0]:
                best = (repeats, pos - run - period, period)
            run = 0
    return best
