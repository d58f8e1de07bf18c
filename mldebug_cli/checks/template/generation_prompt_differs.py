"""What it finds
The text the deploy side appends for generation (the assistant header) differs from the train
template's: another role marker, a missing newline, or think tags opened or closed for the model.

Why it matters for training
The generation prompt is the last thing the model reads before it writes. Training put one exact header
before every assistant reply; a different one changes the first tokens of every answer (a reasoning
model handed `<think>\n` starts thinking; one not handed it may skip thinking).

Example
DeepSeek-R1-Distill trained with the template whose generation prompt is `<｜Assistant｜>` and served
with the updated template that appends `<｜Assistant｜><think>\n`.

Fix
Serve with the training template, or retrain with the served one; for thinking models make
enable_thinking agree on both sides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, serve_hint
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import visible

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    if subject.deploy.fallback or not subject.generation_prompt_differs:
        return
    user = subject.result("user")
    if user is None or user.train_text is None or user.deploy_text is None:
        return
    hunk = next(h for h in user.hunks if h.kind == "generation-prompt")
    served = subject.deploy_generation_prompt
    served_text = served if served is not None else user.deploy_text[hunk.deploy_start :]
    trained = subject.train_generation_prompt
    header = subject.assistant_header
    extra = f"; training put \"{visible(header)}\" before assistant content" if header not in (None, trained) else ""
    yield Hit(
        f"deploy ends the prompt with \"{visible(served_text)}\" where the train template's generation prompt is "
        f"\"{visible(trained if trained is not None else user.train_text[hunk.train_start:])}\"{extra}",
        serve_hint(subject),
        at_deploy(subject, "user"),
    )
