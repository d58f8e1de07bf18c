"""What it finds
A probe whose train and deploy prompts differ only in whitespace: newlines, spaces, indentation.

Why it matters for training
Whitespace is tokens. An extra newline before a header, or a missing space after it, shifts token
boundaries; the effect is usually smaller than a wrong role marker but measurable.

Example
A template written with `{% ... %}` tags on their own lines, rendered by TGI's minijinja without
trim_blocks/lstrip_blocks: every tag leaves a newline the training render (transformers) removed.

Fix
Use whitespace-control tags (`{%- ... -%}`) so every engine renders the same text, or render with the
same engine settings on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import window

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "warning"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    if subject.deploy.fallback:
        return
    for result in subject.results:
        if result.identical or not subject.whitespace_only(result):
            continue
        hunks = subject.text_differences(result)
        first = hunks[0]
        yield Hit(
            f"only whitespace differs ({len(hunks)} place{'s' if len(hunks) != 1 else ''}); first: train "
            f"{window(result.train_text, first.train_start, first.train_end)} vs deploy "
            f"{window(result.deploy_text, first.deploy_start, first.deploy_end)}",
            "use {%- -%} whitespace control in the template, or the same engine settings on both sides",
            at_deploy(subject, result.name),
        )
