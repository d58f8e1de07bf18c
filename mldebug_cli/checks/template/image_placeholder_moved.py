"""What it finds
An image conversation whose deploy prompt carries the same image markers as training's, in another place or joined
to the text differently, while the same conversation without its images renders alike on both sides: the
difference comes from how the serving engine hands image parts to the template. vLLM, for a template that does not
loop over a message's content parts (content format "string"), joins the text parts with a newline and puts every
image's marker in front of them, wherever the images were.

Why it matters for training
The model learned where an image sits relative to the question (and with which separator). At serving time it
reads the image first and a newline it never saw there: answers about images degrade with no error.

Example
Qwen2-VL fine-tuned with TRL (its processor template writes `<|vision_start|><|image_pad|><|vision_end|>` where
the image part is, with no newline) and served by vLLM with `--chat-template` set to a text-only ChatML file:
"What is in the picture?⟨marker⟩" becomes "⟨marker⟩\nWhat is in the picture?".

Fix
Serve with the processor's own template (vLLM picks it when no `--chat-template` is given), or
`--chat-template-content-format openai` with a template that loops over content parts.
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
    moved = [r for r in subject.image_results if r.verdict == ImageVerdict.MOVED]
    if not moved:
        return
    first = moved[0]
    start, train_end, deploy_end = first.first_difference()
    yield Hit(
        f"{len(moved)} image conversation{'s' if len(moved) != 1 else ''} ({probe_list([r.name for r in moved])}) "
        f"place the image markers differently at deploy ({subject.deploy.engine}); first: train "
        f"{window(first.train_text, start, train_end)} vs deploy {window(first.deploy_text, start, deploy_end)}",
        "serve with the processor's own chat template (one that loops over content parts), as training rendered it",
        at_deploy(subject, first.name),
    )
