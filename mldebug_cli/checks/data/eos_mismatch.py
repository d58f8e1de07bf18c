"""What it finds
The tokenizer's EOS token is not the token that ends assistant turns in the chat template, and the
folder's `generation_config.json` does not list the end-of-turn id as an EOS id either.

Why it matters for training
The fine-tuned model ends its turns with the template's end-of-turn token, but generation stops only
on EOS: it keeps going, writing the next user turn itself.

Example
Phi-3: turns end with `<|end|>`, EOS is `<|endoftext|>`; without `eos_token_id: [32000, 32007]` in
generation_config.json, generation does not stop at `<|end|>`.

Not with LLaMA-Factory templates that set `replace_eos` (llama3, phi, qwen, ...): LLaMA-Factory makes the
template's first stop word the tokenizer's EOS, and saves the tokenizer so.

Fix
List the end-of-turn id in generation_config.json `eos_token_id` (and in your server's stop tokens),
or set the tokenizer's eos_token to it.
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
    facts = setup.template_facts
    if not setup.chat or facts is None or not facts.end_of_turn or facts.end_of_turn == setup.eos_text:
        return
    if setup.facts.eos_is_turn_end:  # LLaMA-Factory's replace_eos: the trained tokenizer's EOS is the turn end
        return
    if setup.end_of_turn_id is not None and setup.end_of_turn_id in setup.generation_eos_ids:
        return
    listed = (f"generation_config.json lists only {list(setup.generation_eos_ids)}"
              if setup.generation_eos_ids else "there is no generation_config.json eos_token_id beside the tokenizer")
    yield Hit(
        f"the template ends assistant turns with {facts.end_of_turn!r} but the tokenizer's EOS is {setup.eos_text!r},"
        f" and {listed}",
        f"add the id of {facts.end_of_turn!r} to generation_config.json eos_token_id and your server's stop tokens",
        setup.location(),
    )
