"""What it finds
Training sequences start with the BOS id and deploy prompts do not, or deploy prompts start with a BOS
training never had (the runtime adds one the training tokenization did not).

Why it matters for training
The first position is special to a transformer (attention sinks form there). A model trained with BOS
and prompted without it, or the reverse, sees a different first token on every request.

Example
Phi-3 trained from its tokenizer (`add_bos_token: false`, no BOS in the template) and served from a GGUF
whose `tokenizer.ggml.add_bos_token` is true: llama.cpp prepends `<s>` to every prompt.

Fix
Make both sides agree: set the GGUF's / tokenizer's `add_bos_token`, or add/remove `{{ bos_token }}` in
the template so training and serving both have (or both lack) BOS.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import leading_count

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    differing = [r for r in subject.results if subject.bos_presence_differs(r)]
    if not differing:
        return
    first, deploy = differing[0], subject.deploy
    bos_ids = frozenset(i for i in (subject.train_bos_id, subject.deploy_bos_id) if i is not None)
    if leading_count(first.train_ids, bos_ids):
        message = f"training sequences start with BOS ({subject.train.bos_text}) but deploy prompts do not"
        hint = "add BOS on the deploy side ({{ bos_token }} in the template, or add_bos_token = true)"
    else:
        adds = f"{deploy.engine} adds it (add_bos_token is true)" if deploy.adds_bos else "the deploy template writes it"
        message = f"deploy prompts start with BOS ({deploy.bos_text}) but training sequences do not: {adds}"
        hint = "set add_bos_token = false in the GGUF / tokenizer config, or train with the same BOS"
    yield Hit(f"{message} ({len(differing)} probes: {probe_list([r.name for r in differing])})", hint,
              at_deploy(subject, first.name))  # fmt: skip
