"""What it finds
The tokenizer has no pad token while the framework pads batches through it: transformers'
collators (`DataCollatorForLanguageModeling`, `DataCollatorWithPadding`, `DataCollatorForSeq2Seq`)
call `tokenizer.pad`, which raises before the first step.

Why it matters for training
The run dies at its first batch with `ValueError: Asking to pad but the tokenizer does not have a
padding token` (transformers `tokenization_utils_base.py`), after the model was loaded: minutes to hours
of start-up lost. TRL's trainers, LLaMA-Factory and axolotl set a pad token themselves; a plain
`Trainer` script does not. `mldebug check-run` names the same error in a crashed run's log (RN040).

Example
Llama 3's tokenizer (`pad_token: null`) with `--framework transformers`.

Fix
Set `tokenizer.pad_token` before training: a dedicated pad token (`<|finetune_right_pad_id|>` in Llama 3,
or `tokenizer.add_special_tokens({'pad_token': '<pad>'})` and resize the embeddings), or the EOS token when
labels mask padding by position (see DS006 for the collator that masks by id).
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
    if setup.pad_id is not None or not setup.facts.pad_masked_by_id:
        return  # the frameworks that pad by position also pick a pad token themselves
    yield Hit(
        "the tokenizer has no pad token and transformers' collators pad with tokenizer.pad: the run stops at its "
        "first batch with \"Asking to pad but the tokenizer does not have a padding token\"",
        "set tokenizer.pad_token before training (a dedicated pad token, or eos_token when padding is masked by "
        "position)",
        setup.location(),
    )
