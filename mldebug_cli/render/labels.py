"""From trained character spans to per-token labels, the way transformers builds assistant masks.

transformers' ``return_assistant_tokens_mask`` marks every token from the one holding a span's first
character to the one holding its last character; a token that straddles a span edge is trained.
We do the same with the fast tokenizer's Encoding (``char_to_token``), in O(spans) lookups.
"""

from __future__ import annotations

from collections.abc import Sequence

from mldebug_cli.core.labels import IGNORE_INDEX


def labels_from_encoding(
    encoding, spans: Sequence[tuple[int, int]], ids: list[int] | None = None
) -> tuple[list[int], list[int]]:
    """Labels (the input id where trained, -100 elsewhere) and the positions of tokens straddling a span edge.

    ``ids`` saves reading ``encoding.ids`` again (each read copies the whole sequence out of Rust).
    """
    ids = encoding.ids if ids is None else ids
    labels = [IGNORE_INDEX] * len(ids)
    straddles: set[int] = set()
    for start, end in spans:
        first, stop = token_range(encoding, start, end)
        if stop <= first:
            continue
        labels[first:stop] = ids[first:stop]
        if encoding.token_to_chars(first)[0] < start:
            straddles.add(first)
        if encoding.token_to_chars(stop - 1)[1] > end:
            straddles.add(stop - 1)
    return labels, sorted(straddles)


def token_range(encoding, start: int, end: int) -> tuple[int, int]:
    """Token positions [first, stop) covering characters [start, end); (0, 0) when none does."""
    if end <= start:
        return (0, 0)
    first = _token_near(encoding, start, end, step=1)
    last = _token_near(encoding, end - 1, start - 1, step=-1)
    if first is None or last is None or last < first:
        return (0, 0)
    return (first, last + 1)


def _token_near(encoding, char: int, limit: int, step: int) -> int | None:
    """The token holding ``char``, or the nearest one towards ``limit`` (a normalizer may drop characters)."""
    while char != limit:
        token = encoding.char_to_token(char)
        if token is not None:
            return token
        char += step
    return None
