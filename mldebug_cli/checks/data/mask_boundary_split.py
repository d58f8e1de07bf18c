"""What it finds
A token that straddles the edge of a trained span: its characters are partly prompt and partly
answer, so the first or last character of a trained span shares a token with masked text (or masked
text is trained with it).

Why it matters for training
The model learns a merged token it will rarely produce at inference (where the prompt ends exactly
at the header), typically a space or newline glued to the answer's first word.

Example
A template whose assistant header ends in a space (`Assistant: `) with a byte-level BPE tokenizer
that glues the space to the answer's first word (`ĠHello`).

Fix
End headers with a token boundary (a newline or a special token), or mask at token level.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "info"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.straddles:
        return
    pos = row.straddles[0]
    start, end = row.offsets[pos]
    yield Hit(
        f"token {pos} ({row.text[start:end]!r}) straddles a trained/masked boundary"
        + (f" ({len(row.straddles)} such tokens)" if len(row.straddles) > 1 else ""),
        "end the prompt on a token boundary (newline or special token) before the answer",
        row.location(),
    )
