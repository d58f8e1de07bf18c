"""What it finds
A special token of the train tokenizer that has another id in the deploy vocabulary (a GGUF, or the
tokenizer DEPLOY names), or that the deploy vocabulary does not have at all.

Why it matters for training
The model's embedding rows belong to ids. If `<|im_end|>` is id 151645 in training and another id (or
several plain-text tokens) at serving, the model reads and writes something else than it learned.

Example
A GGUF converted from the base model's tokenizer while training added `<|im_start|>`/`<|im_end|>`: the
deploy vocabulary lacks them, so llama.cpp splits them into ordinary tokens.

Fix
Convert the GGUF from the fine-tuned model's own tokenizer files (the ones saved with the checkpoint).
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
MAX_SHOWN = 4


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    deploy = subject.deploy
    if deploy.gguf is None and (deploy.loaded is None or deploy.loaded is subject.train.loaded):
        return
    problems = []
    for text, train_id in subject.train_special_tokens.items():
        deploy_id = deploy.token_id(text)
        if deploy_id is None:
            problems.append(f"{text} ({train_id}) is missing from the deploy vocabulary")
        elif deploy_id != train_id:
            problems.append(f"{text} is {train_id} in training but {deploy_id} at deploy")
    if not problems:
        return
    shown = "; ".join(problems[:MAX_SHOWN]) + (f"; and {len(problems) - MAX_SHOWN} more" if len(problems) > MAX_SHOWN else "")
    yield Hit(
        f"{len(problems)} special token{'s' if len(problems) != 1 else ''} differ{'s' if len(problems) == 1 else ''} "
        f"between the train tokenizer and the deploy vocabulary: {shown}",
        "convert the deploy model from the fine-tuned checkpoint's own tokenizer files",
        at_deploy(subject),
    )
