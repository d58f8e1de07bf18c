"""What it finds
Two end-of-turn/EOS ids in a row, or an EOS that is not at the end of an assistant turn or of the
row (when EOS is not also the template's end-of-turn token).

Why it matters for training
A doubled stop token usually means the template wrote EOS and the trainer appended another; the
model learns to emit a stop token after its stop token. An EOS mid-sequence teaches the model to
stop and then carry on.

Example
A `text` column holding a rendered chat that already ends in `<|im_end|>`, with an extra `</s>` or
`<|im_end|>` appended by the trainer.

Fix
Append EOS only when the text does not already end with a stop token.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    ids = row.input_ids
    if not row.ok or len(ids) < 2 or not setup.stop_ids:
        return
    for pos in _doubled_stops(row, setup):
        yield Hit(
            f"two stop tokens in a row at positions {pos - 1}-{pos}"
            f" ({setup.id_to_piece(ids[pos - 1])!r} {setup.id_to_piece(ids[pos])!r})",
            "append EOS only when the text does not already end with a stop token",
            row.location(),
        )
        return
    if setup.eos_id is None or setup.eos_id == setup.end_of_turn_id:
        return
    for pos in _positions(ids, setup.eos_id):
        if not _at_an_end(row, pos):
            yield Hit(
                f"EOS {setup.eos_text!r} at position {pos} is neither at the end of an assistant turn nor of the row",
                "EOS in the middle of a sequence teaches the model to stop and carry on",
                row.location(),
            )
            return


def _doubled_stops(row, setup) -> Iterator[int]:
    """The same stop id twice, or an EOS the trainer appended right after a stop token.

    Different stop ids in a row written by the template itself (Phi-3's `<|end|>` then
    `<|endoftext|>`) are the template's design, not a defect.
    """
    ids = row.input_ids
    for stop in setup.stop_ids:
        pos = _find_pair(ids, stop)
        if pos is not None:
            yield pos
    last = len(ids) - 1
    if row.appended_eos and not row.truncated and ids[last] == setup.eos_id and ids[last - 1] in setup.stop_ids:
        yield last


def _positions(ids: list[int], token: int) -> Iterator[int]:
    pos = -1
    while True:
        try:
            pos = ids.index(token, pos + 1)
        except ValueError:
            return
        yield pos


def _find_pair(ids: list[int], token: int) -> int | None:
    """Position of the second of two consecutive ``token`` ids."""
    for pos in _positions(ids, token):
        if pos + 1 < len(ids) and ids[pos + 1] == token:
            return pos + 1
    return None


def _at_an_end(row, pos: int) -> bool:
    last_real = len(row.input_ids) - 1
    while last_real > pos and _blank(row, last_real):
        last_real -= 1
    if pos == last_real:
        return True
    for turn in row.turns:
        if turn.start <= pos < turn.end and all(_blank(row, p) for p in range(pos + 1, turn.end)):
            return True
    return False


def _blank(row, pos: int) -> bool:
    if pos >= len(row.offsets):
        return False
    start, end = row.offsets[pos]
    return end > start and not row.text[start:end].strip()
