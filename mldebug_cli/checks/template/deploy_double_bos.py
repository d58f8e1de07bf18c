"""What it finds
Deploy prompts that reach the model starting with two BOS ids: the template writes the BOS text and the
runtime adds the BOS id again when it tokenizes the prompt.

Why it matters for training
Training sequences started with one BOS. A doubled BOS is a sequence shape the model never saw, and it
measurably degrades generation; it is the best-known symptom of a template/runtime mismatch.

Example
An Ollama Modelfile whose TEMPLATE starts with `<s>` on a GGUF with `add_bos_token = true`: Ollama does
not strip the text (llama.cpp's server does), so the prompt starts `<s><s><|user|>`.

Fix
Remove the literal BOS from the template, or turn off the runtime's BOS (`add_bos_token = false`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list
from mldebug_cli.core.findings import Hit
from mldebug_cli.engines.registry import engine

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    doubled = [r for r in subject.results if subject.double_bos(r)]
    if not doubled:
        return
    deploy, first = subject.deploy, doubled[0]
    bos = deploy.bos_text or "BOS"
    writes = bool(first.deploy_text and deploy.bos_text and first.deploy_text.startswith(deploy.bos_text))
    why = (f"the template writes {bos} and {deploy.engine} adds the BOS id when it tokenizes"
           if writes and deploy.adds_bos else "the rendered prompt starts with BOS twice")  # fmt: skip
    hint = engine(deploy.engine).double_bos_hint
    yield Hit(
        f"the deploy prompt starts with {bos} {bos} in {len(doubled)} of {len(subject.differing)} differing probes "
        f"({probe_list([r.name for r in doubled])}): {why}",
        hint,
        at_deploy(subject, first.name),
    )
