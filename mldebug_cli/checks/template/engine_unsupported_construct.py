"""What it finds
The deploy engine cannot render the training template itself for some probe that transformers renders:
an unknown filter or test, a Python string method minijinja or llama.cpp's Jinja engine lacks,
`{% generation %}` or `strftime_now` where they are not defined. Only a template identical to the train
template is judged here (a different template failing is CT013).

Why it matters for training
Requests with such conversations fail at the server (HTTP 500), or the engine is configured to fall
back to another template, so the model is served with a format it was not trained on.

Example
A template calling a method that TGI's minijinja does not implement: TGI refuses every request whose
conversation reaches that branch.

Fix
Rewrite the construct with portable Jinja (filters and tests every engine has), or serve with an engine
that supports it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "warning"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    if subject.deploy.template != subject.train.template:
        return
    failed = [r for r in subject.results if r.deploy_error]
    if not failed:
        return
    yield Hit(
        f"{subject.deploy.engine} fails on the training template for {len(failed)} probes "
        f"({probe_list([r.name for r in failed])}) that transformers renders: {failed[0].deploy_error}",
        "replace the construct the engine lacks with portable Jinja",
        at_deploy(subject, failed[0].name),
    )
