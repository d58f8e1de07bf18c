"""What it finds
A row that does not start with BOS although the tokenizer adds BOS by default or the chat template
writes it.

Why it matters for training
The model was pre-trained with BOS at position 0 and will be prompted with it at inference; rows
without it train on a shifted distribution (the first token attends differently).

Example
A pre-tokenized dataset built with `add_special_tokens=False` for a Llama-style tokenizer that adds
`<s>`.

Fix
Tokenize with the tokenizer's default special tokens, or let the chat template write BOS.
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
    if setup.bos_id is None or not row.input_ids or row.input_ids[0] == setup.bos_id:
        return
    writes = setup.template_facts is not None and setup.template_facts.writes_bos
    if not (setup.tokenizer_adds_bos or (writes and setup.chat)):
        return
    expected_by = "the chat template writes" if writes and setup.chat else "the tokenizer adds"
    yield Hit(
        f"row starts with {setup.id_to_piece(row.input_ids[0])!r}, not BOS {setup.bos_text!r}, which {expected_by} by default",
        "tokenize with the tokenizer's default special tokens (or let the template write BOS)",
        row.location(),
    )
