"""What it finds
An image conversation whose deploy prompt has no trace of its image parts: it renders exactly as the same
conversation without the images, so fewer image markers than images reach the model.

Why it matters for training
The deploy template ignores image parts (a text-only template that prints only text parts). The serving engine
then has images with no place in the prompt: vLLM refuses the request, or the model answers without seeing the
image it was trained to look at.

Example
A fine-tuned Gemma 3 served by vLLM with `--chat-template` set to the text model's template, which loops over the
content parts but writes only those of type "text".

Fix
Serve with the processor's chat template, which writes the image marker for each image part.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list, serve_hint
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import ImageVerdict

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    dropped = [r for r in subject.image_results if r.verdict == ImageVerdict.DROPPED]
    if not dropped:
        return
    first = dropped[0]
    yield Hit(
        f"the deploy template drops the image parts of {len(dropped)} image conversation"
        f"{'s' if len(dropped) != 1 else ''} ({probe_list([r.name for r in dropped])}): {first.name} has "
        f"{first.images} image{'s' if first.images != 1 else ''} and its deploy prompt {first.markers('deploy')} "
        f"{first.marker}, the same text as without the images",
        serve_hint(subject),
        at_deploy(subject, first.name),
    )
