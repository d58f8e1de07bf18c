"""What it finds
A plain-text or prompt/completion row (or a pre-tokenized row) with no EOS or end-of-turn token at
its end at all, after the trainer's own tokenization (TRL, axolotl and LLaMA-Factory append EOS to
plain text and completions; a bare transformers Trainer with `tokenizer(text)` does not).

Why it matters for training
Without a trained EOS the model never learns where a document or answer ends and generates until
the length limit.

Example
`{"text": "### Question: ... ### Answer: ..."}` tokenized with a Qwen tokenizer, which adds no EOS.

Fix
Append the EOS token to each text, or use a trainer that appends it (`--framework trl`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit
from mldebug_cli.sources.row_formats import PromptCompletion, Text, Tokens

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.input_ids or not setup.stop_ids:
        return
    sample = row.sample
    if isinstance(sample, Tokens):
        if not any(i in setup.stop_ids for i in row.input_ids + row.cut_ids):
            yield Hit(f"the row has no EOS/end-of-turn id ({setup.eos_text!r}) anywhere",
                      "append the EOS id to each tokenized row", row.location())
        return
    if not (isinstance(sample, Text) or (isinstance(sample, PromptCompletion) and not sample.conversational)):
        return
    last = row.last_id_before_truncation
    if last is not None and last not in setup.stop_ids:
        yield Hit(
            f"the row ends with {setup.id_to_piece(last)!r}, not EOS {setup.eos_text!r}"
            f" ({setup.framework} does not append one)",
            "append the EOS token to each text, or use a trainer that appends it",
            row.location(),
        )
