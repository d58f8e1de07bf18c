"""What it finds
Rows whose ids include a token the tokenizer knows but the model has no embedding row for: an id at or beyond
the model's `vocab_size` (its config.json, from `--model` or the model folder a `--config` names), almost
always an added token (`<|im_start|>`, `<think>`, a tool-call marker) that the tokenizer gained after the
model's embeddings were sized. Quiet for a framework that grows the embeddings to the tokenizer itself
(axolotl's loader does, per its FAQ); the message names the ids and their tokens.

Why it matters for training
TRL's `SFTTrainer` and the transformers `Trainer` do not resize the embeddings: the embedding lookup fails
with `IndexError: index out of range in self` (a device-side assert on CUDA) at the first batch holding such a
row. Where something resizes them silently, the new rows start random and, under LoRA without
`modules_to_save`, never train (GP003).

Example
A ChatML template's `<|im_end|>` (id 151645) with a base model whose `vocab_size` is 151643.

Fix
Resize the embeddings to the tokenizer before training (`model.resize_token_embeddings(len(tokenizer))`, or
TRL's `clone_chat_template`) and train the new rows (`modules_to_save: [embed_tokens, lm_head]` or
`trainable_token_indices` with LoRA); or use the tokenizer and template the model was trained with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    limit, vocab = setup.embedding_rows, setup.vocab_size
    if not row.ok or not limit or setup.facts.resizes_embeddings:
        return
    beyond = sorted({i for i in row.input_ids if limit <= i < (vocab or i + 1)})
    if not beyond:
        return
    tokens = ", ".join(f"{i} {setup.id_to_piece(i)!r}" for i in beyond[:3]) + (", ..." if len(beyond) > 3 else "")
    yield Hit(f"ids beyond the model's {limit:,} embedding rows ({setup.model_config}): {tokens}",
              "resize the embeddings to len(tokenizer) before training and train the new rows (modules_to_save or "
              "trainable_token_indices with LoRA), or use the tokenizer the model was trained with", row.location())
