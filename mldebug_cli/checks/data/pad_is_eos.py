"""What it finds
The pad id equals the EOS or end-of-turn id while the collator in use masks labels by pad id
(transformers' `DataCollatorForLanguageModeling`, and TRL before it moved to position-based
padding): every real EOS label becomes -100 too.

Why it matters for training
The model never sees a trained EOS and does not learn to stop, although every row ends with one.

Example
`tokenizer.pad_token = tokenizer.eos_token` (the usual quick fix for tokenizers without a pad token)
with `DataCollatorForLanguageModeling(mlm=False)`.

Fix
Use a distinct pad token (e.g. `<|endoftext|>`, `<unk>` or a new `<pad>`), or a collator that masks
padding by position (TRL's SFTTrainer).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "warning"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    if setup.pad_id is None or not setup.facts.pad_masked_by_id:
        return
    if setup.pad_id in (setup.eos_id, setup.end_of_turn_id):
        yield Hit(
            f"pad token {setup.pad_text!r} (id {setup.pad_id}) is also the EOS/end-of-turn token, and"
            " DataCollatorForLanguageModeling sets labels equal to the pad id to -100: every EOS label is lost",
            "set a distinct pad token, or use a collator that masks padding by position (TRL's SFTTrainer)",
            setup.location(),
        )
