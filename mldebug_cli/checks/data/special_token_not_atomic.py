"""What it finds
A special-token literal the chat template writes (a role marker or end-of-turn token such as
`<|im_start|>`, `<|eot_id|>`, `<start_of_turn>`) that the tokenizer splits into several ids.

Why it matters for training
The model never sees the control token it will be prompted with: it learns to spell `<|im_end|>` as
seven ordinary pieces, and generation never emits the real stop id. It happens when a chat template
is put on a base model's tokenizer that lacks the token.

Example
ChatML's template on a Llama-2 tokenizer without `<|im_start|>`/`<|im_end|>` added.

Fix
Add the tokens to the tokenizer (`add_special_tokens`) and resize the embeddings, or use the
template that matches the tokenizer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "error"
SUBJECT = "setup"
SPECIAL_LOOKING = re.compile(r"<\|[^|<>\s]{1,48}\|>|<(?:start|end)_of_turn>|</?s>")
BRACKET_CONTROL = re.compile(r"\[/?[A-Z][A-Z_]{1,30}\]")


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    if not setup.template:
        return
    candidates = set(SPECIAL_LOOKING.findall(setup.template))
    if any(BRACKET_CONTROL.fullmatch(t) for t in setup.special_texts):
        candidates |= set(BRACKET_CONTROL.findall(setup.template))  # this vocabulary uses [INST]-style control tokens
    if setup.template_facts and setup.template_facts.end_of_turn:
        candidates.add(setup.template_facts.end_of_turn)
    split = sorted((text, setup.encode(text)) for text in candidates)
    split = [(text, ids) for text, ids in split if len(ids) > 1]
    if split:
        text, ids = split[0]
        others = f" (and {len(split) - 1} more: {', '.join(t for t, _ in split[1:6])})" if len(split) > 1 else ""
        yield Hit(
            f"the template writes {text!r}, which the tokenizer splits into {len(ids)} ids {ids[:8]}{others}",
            "add the token to the tokenizer as a special token (and resize embeddings), or use the matching template",
            setup.location(),
        )
