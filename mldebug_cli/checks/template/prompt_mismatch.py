"""What it finds
A probe conversation whose rendered prompt differs between training and deployment, for a reason no
more specific check (CT003-CT009, CT012) explains. Each difference is classified: bos-eos,
system-block, generation-prompt, role-marker, whitespace, date or other; the first one is shown with
its context and whitespace made visible.

Why it matters for training
The model learned one exact text layout. At serving time it reads a different one: headers, separators
or turn endings it never saw in that position. Quality drops silently instead of failing loudly.

Example
Phi-3 fine-tuned with `<|system|>\nYou are ...<|end|>` and served from a GGUF whose older template has no
system turn: llama.cpp merges the system text into the first user message (`<|user|>\nYou are ...\n...`).

Fix
Serve with the exact template used in training (llama.cpp `--chat-template-file`, vLLM
`--chat-template`, the Modelfile TEMPLATE), or train with the template the server uses.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, serve_hint
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import HUNK_CLASSES, window

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    for result in subject.results:
        hunks = subject.unexplained_hunks(result)
        if not hunks:
            continue
        kinds = sorted({h.kind for h in hunks}, key=HUNK_CLASSES.index)
        first = hunks[0]
        yield Hit(
            f"{len(hunks)} difference{'s' if len(hunks) != 1 else ''} ({', '.join(kinds)}); first ({first.kind}): "
            f"train {window(result.train_text, first.train_start, first.train_end)} vs deploy "
            f"{window(result.deploy_text, first.deploy_start, first.deploy_end)}",
            serve_hint(subject),
            at_deploy(subject, result.name),
        )
