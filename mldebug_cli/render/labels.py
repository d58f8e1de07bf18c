"""From trained character spans to per-token labels, the way transformers builds assistant masks."""

from __future__ import annotations

from collections.abc import Sequence

IGNORE_INDEX = -100


def token_labels(
    input_ids: Sequence[int],
    offsets: Sequence[tuple[int, int]],
    spans: Sequence[tuple[int, int]],
) -> tuple[list[int], list[int]]:
    """Labels (input id where trained, -100 elsewhere) and the positions of tokens that straddle a span edge.

    A token is trained when its characters overlap a trained span; this matches transformers'
    ``return_assistant_tokens_mask`` (the tokens holding a span's first and last characters are in).
    Zero-width tokens (a BOS the tokenizer adds) are never inside a span.
    """
    labels = [IGNORE_INDEX] * len(input_ids)
    straddles: list[int] = []
    if not spans:
        return labels, straddles
    spans = sorted(spans)
    k = 0
    for pos, (start, end) in enumerate(offsets):
        if end <= start:
            continue
        while k < len(spans) and spans[k][1] <= start:
            k += 1
        if k == len(spans):
            break
        span_start, span_end = spans[k]
        if start < span_end and end > span_start:
            labels[pos] = input_ids[pos]
            if start < span_start or end > span_end:
                straddles.append(pos)
    return labels, straddles


def token_span(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Token positions [first, last+1) covering characters [start, end)."""
    first = last = None
    for pos, (s, e) in enumerate(offsets):
        if e <= s:
            continue
        if e > start and s < end:
            if first is None:
                first = pos
            last = pos
        elif s >= end:
            break
    if first is None:
        return (0, 0)
    return (first, last + 1)
