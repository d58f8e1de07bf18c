"""What it finds
A template whose output changes with the current date (`strftime_now`, llama.cpp's `date_string`,
Ollama's `currentDate`): rendered for two dates, the same conversation gives two prompts.

Why it matters for training
Training rendered each conversation with the date of the day it was tokenized; serving uses today's.
That is usually intended, but it makes prompts unreproducible, and a template printing a date on only
one side is a difference on every request.

Example
Llama 3.1's template prints "Today Date: 26 Jul 2024" under transformers (its default) while llama.cpp
passes today's date as `date_string`.

Fix
Usually nothing; to pin it, pass a fixed `date_string` on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, at_train
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "info"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    for role, locate in (("train", at_train), ("deploy", at_deploy)):
        if subject.date_dependent.get(role):
            side = subject.train if role == "train" else subject.deploy
            yield Hit(
                f"the {role} prompt changes with the current date ({side.engine} rendering {side.template_source}); "
                "mldebug renders with a fixed date",
                "pass a fixed date_string on both sides to make prompts reproducible",
                locate(subject, "user"),
            )
