"""What it finds
The deploy side fails to render a probe conversation that the train template renders: the deploy
template raises (for example a roles-must-alternate check, or no tool support), or Ollama's Go template
fails to execute. (A failure of the training template itself on another engine is CT010.)

Why it matters for training
Requests shaped like that probe fail at the server, although the model was trained on such
conversations.

Example
Deploying a Mistral template that raises "conversation roles must alternate" for a model trained with a
template that accepts a system message.

Fix
Serve with the training template, or make the deploy template accept the same conversations.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.render.diff import ImageProbeResult, ProbeResult, TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    same = subject.deploy.template == subject.train.template  # an image conversation's engine may refuse it all the same
    failed: list[ProbeResult | ImageProbeResult] = [*([] if same else [r for r in subject.results if r.deploy_error]),
              *[r for r in subject.image_results if r.deploy_error]]
    if not failed:
        return
    yield Hit(
        f"the deploy side cannot render {len(failed)} probes the train template renders "
        f"({probe_list([r.name for r in failed])}): {failed[0].deploy_error}",
        "serve with the training template, or make the deploy template accept these conversations",
        at_deploy(subject, failed[0].name),
    )
