"""What it finds
With no system message, one side writes a default system prompt and the other does not, or the two
defaults differ (a template's built-in default, or a Modelfile SYSTEM).

Why it matters for training
A model trained with "You are Qwen, created by Alibaba Cloud..." in every conversation without a system
message meets a prompt with no system turn at all (or a different persona) when served.

Example
Qwen2.5 trained with its own template (which injects its default system prompt) and served by an
Ollama Modelfile with Ollama's ChatML template, which writes no system block without a system message.

Fix
Make the defaults agree: add the same SYSTEM to the Modelfile / the deploy template, or send the system
message explicitly in every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import visible

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "warning"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    user = subject.result("user")
    if subject.deploy.fallback or user is None or not user.compared or user.identical:
        return
    if not subject.default_system_differs:
        return
    yield Hit(
        f"without a system message, training writes {_describe(subject.train_default_system)} and deploy writes "
        f"{_describe(subject.deploy_default_system)}",
        "give the deploy side the same default (Modelfile SYSTEM, or the training template's default system prompt)",
        at_deploy(subject, "user"),
    )


def _describe(default: str | None) -> str:
    if default is None:
        return "no system block"
    if not default:
        return "an empty system block"
    return f"the system prompt \"{visible(default[:80])}{'…' if len(default) > 80 else ''}\""
