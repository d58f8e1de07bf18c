"""What it finds
An image conversation whose deploy prompt does not mark each image with the model's image marker (the string its
processor expands into the image's tokens, e.g. Qwen2-VL's `<|vision_start|><|image_pad|><|vision_end|>`, LLaVA's
`<image>`, Gemma 3's `<start_of_image>`), or whose training prompt did not: the deploy template writes another
string for an image part, or another number of markers than images.

Why it matters for training
The serving engine expands only the model's own marker into image tokens. A prompt with another string carries the
literal text instead: vLLM refuses the request (the image has no place in the prompt) or the model sees text it was
never trained on where the image was.

Example
A Qwen2-VL model served with a LLaVA-style template that writes `<image>` for each image part: the prompt has no
`<|image_pad|>` for the processor to expand.

Fix
Serve with the model's processor template, or one that writes the model's image marker for each image part.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy, probe_list
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.diff import ImageVerdict, window

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"


def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    differs = [r for r in subject.image_results if r.verdict == ImageVerdict.MARKER]
    if not differs:
        return
    first = differs[0]
    start, train_end, deploy_end = first.first_difference()
    yield Hit(
        f"{len(differs)} image conversation{'s' if len(differs) != 1 else ''} "
        f"({probe_list([r.name for r in differs])}) mark images differently: {first.name} has {first.images} "
        f"image{'s' if first.images != 1 else ''}, {first.markers('train')} {first.marker} in training and "
        f"{first.markers('deploy')} at deploy; train {window(first.train_text, start, train_end)} vs deploy "
        f"{window(first.deploy_text, start, deploy_end)}",
        f"serve with a template that writes {first.marker} for each image part, as the processor's does",
        at_deploy(subject, first.name),
    )
