"""What it finds
A row whose input ids start with the BOS id twice: the chat template (or the text itself) already
writes BOS, and tokenizing with special tokens adds another.

Why it matters for training
The model is trained on a sequence shape it never sees at inference (one BOS), which measurably
degrades fine-tunes; it is the most common symptom of rendering a template to text and then
tokenizing it again with `add_special_tokens=True`.

Example
Mistral-Nemo's template writes `<s>`; a `text` column holding that render, tokenized by TRL's
SFTTrainer, starts `<s><s>[INST]`.

Fix
Tokenize pre-rendered chat text with `add_special_tokens=False`, or remove BOS from the text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.sources.row_formats import Text, Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    ids = row.input_ids
    if setup.bos_id is None or len(ids) < 2 or ids[0] != setup.bos_id or ids[1] != setup.bos_id:
        return
    if isinstance(row.sample, Text):
        why = f"the text starts with {setup.bos_text} and tokenization adds another"
    elif isinstance(row.sample, Tokens):
        why = "the pre-tokenized row starts with two BOS ids"
    else:
        why = "the rendered prompt starts with BOS twice"
    yield Hit(
        f"input ids start with BOS twice ({setup.bos_text} {setup.bos_text}): {why}",
        "tokenize rendered chat text with add_special_tokens=False, or strip BOS from the text",
        row.location(),
    )
