"""Small helpers the data checks share."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.masking import content_text


def trained_runs(labels: Sequence[int]) -> Iterator[tuple[int, int]]:
    """Maximal runs [start, end) of trained positions."""
    start = None
    for pos, label in enumerate(labels):
        if label != IGNORE_INDEX and start is None:
            start = pos
        elif label == IGNORE_INDEX and start is not None:
            yield start, pos
            start = None
    if start is not None:
        yield start, len(labels)


def tool_calls(messages) -> Iterator[tuple[int, dict]]:
    """(message index, function) for every tool call; the function holds ``name`` and ``arguments``."""
    for i, message in enumerate(messages):
        for call in message.get("tool_calls") or []:
            function = call.get("function", call) if isinstance(call, dict) else None
            if isinstance(function, dict):
                yield i, function


def show(text: str, limit: int = 40) -> str:
    """A short, quoted, one-line rendering of text for messages."""
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def rows_word(n: int) -> str:
    return f"{n} token{'s' if n != 1 else ''}"


def dropped_note(row, setup) -> str:
    """For a row the trainer leaves out because nothing of it is trained: say so."""
    if not (row.dropped and row.dropped_by == "nothing-trained"):
        return ""
    return f"; {setup.framework} drops the row from training (no trained token is left after truncation)"


REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def reasoning_traces(messages) -> Iterator[tuple[int, str, str]]:
    """(message index, where the trace is, its text) for every assistant turn's reasoning: a reasoning field, else
    the text after the content's first ``<think>`` (up to its ``</think>``, or to the end when never closed)."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for key in REASONING_KEYS:
            value = message.get(key)
            if isinstance(value, str) and value.strip():
                yield i, key, value
                break
        else:
            content = content_text(message.get("content"))
            start = content.find(THINK_OPEN)
            if start >= 0:
                end = content.find(THINK_CLOSE, start)
                yield i, "<think>", content[start + len(THINK_OPEN): end if end >= 0 else len(content)]
