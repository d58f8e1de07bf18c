"""What it finds
A probe whose prompt text is the same on both sides (or differs only by a BOS/EOS the runtime adds back
as an id) while the token ids still differ: the deploy runtime tokenizes differently, e.g. llama.cpp
appending EOS to every prompt because the GGUF sets `add_eos_token`.

Why it matters for training
The model consumes ids, not text. An extra or different id in the prompt is an input the model never
saw during training, even though every printed prompt looks right.

Example
A GGUF converted with `tokenizer.ggml.add_eos_token = true`: llama.cpp tokenizes
`...<|im_start|>assistant\n` and appends `<|im_end|>`, so the reply starts after an end-of-turn.

Fix
Make the runtime's tokenization match training: fix `add_bos_token`/`add_eos_token` in the GGUF
metadata or the tokenizer config, or the server's `add_special_tokens` setting.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    for result in subject.results:
        if not result.compared or result.identical or subject.text_differences(result):
            continue
        if subject.double_bos(result) or subject.bos_presence_differs(result) or not result.token_hunks:
            continue
        first = result.token_hunks[0]
        yield Hit(
            f"the prompt text matches but the token ids differ at token {first.deploy_at}: train "
            f"[{' '.join(first.train) or 'nothing'}] vs deploy [{' '.join(first.deploy) or 'nothing'}]",
            "check the runtime's BOS/EOS flags (GGUF add_bos_token/add_eos_token, add_special_tokens)",
            at_deploy(subject, result.name),
        )
