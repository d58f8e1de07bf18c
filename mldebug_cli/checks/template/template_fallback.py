"""What it finds
The deploy runtime would not use the trained template at all: the GGUF has no chat template (llama.cpp
renders ChatML), its template does not parse, or Ollama imported the model without a TEMPLATE and
matched none of its template families (it then sends the raw prompt, `{{ .Prompt }}`).

Why it matters for training
Every request is formatted in a layout the model was never trained on. While this holds, the other
prompt differences are consequences of it and are not reported separately.

Example
A GGUF converted without `tokenizer.chat_template` served by llama-server: every conversation becomes
`<|im_start|>user\n...<|im_end|>` whatever the model learned.

Fix
Write the training template into the GGUF (convert from a folder whose tokenizer_config.json holds it,
or `gguf_new_metadata.py --chat-template-config`), pass `--chat-template-file`, or give the Modelfile a
TEMPLATE.
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
    deploy = subject.deploy
    if not deploy.fallback:
        return
    differing = len(subject.differing)
    yield Hit(
        f"{deploy.fallback}; {differing} of {len(subject.results)} probes render differently from training",
        "embed the training template in the model (GGUF tokenizer.chat_template, Modelfile TEMPLATE) or pass it "
        "to the server",
        at_deploy(subject),
    )
