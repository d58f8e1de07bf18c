"""What it finds
Pre-tokenized rows holding an input id (or a trained label) that the tokenizer does not have: negative, or at
or beyond `len(tokenizer)` (its vocabulary and added tokens), e.g. an id of 999999 with a 151,665-id
tokenizer. The message gives how many, the first such id and its position.

Why it matters for training
The model's embedding lookup has no row for the id: PyTorch raises `IndexError: index out of range in
self` on the CPU and a device-side assert on CUDA, often many steps in, when the shuffled sampler reaches the
row. An id that is in range only because the model's embedding matrix is padded larger (a 151,936-row Qwen2.5
with a 151,665-id tokenizer) trains a token the tokenizer can never produce or decode. Either way the ids were
made by another tokenizer, or corrupted in preprocessing.

Example
`input_ids: [151644, 872, 999999, 151645]` checked against the Qwen2.5 tokenizer.

Fix
Re-tokenize the rows with the tokenizer the model trains with (the one the ids came from is another), or drop
the rows; check the preprocessing that wrote the ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.row_formats import Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not isinstance(row.sample, Tokens) or not setup.vocab_size:
        return
    size = setup.vocab_size
    for column, values in (("input_ids", row.sample.input_ids), ("labels", row.sample.labels or ())):
        outside = [(p, v) for p, v in enumerate(values)
                   if (v < 0 or v >= size) and not (column == "labels" and v == IGNORE_INDEX)]
        if outside:
            position, value = outside[0]
            yield Hit(f"{column} holds {len(outside)} id{'s' if len(outside) != 1 else ''} outside the tokenizer's "
                      f"{size:,} (first: {value} at position {position})",
                      "re-tokenize the row with the model's tokenizer, or drop it: the embedding lookup has no row "
                      "for that id", row.location())
            return
