"""What it finds
A vision-language row whose image placeholders (`{"type": "image"}` content parts) do not number its images.

Why it matters for training
TRL's `prepare_multimodal_messages` raises `ValueError: Number of images provided (N) does not match number of image
placeholders (M)` and the processor raises "The number of images does not match the number of image tokens": the run
stops at the batch that holds the row.

Example
A row with `"images": ["a.png", "b.png"]` whose user message has one `{"type": "image"}` part.

Fix
Give one `{"type": "image"}` part per image, in the order of the `images` list (or write every content as a string:
TRL then puts all the images before the first user message).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trl.vision import VisionRow
    from mldebug_cli.frameworks.vision_subjects import VisionSetup

SEVERITY = "error"
SUBJECT = "vision-row"
CODE = "DS031"


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    refused = row.refused
    if refused is not None and refused.code == CODE:
        yield Hit(refused.message, refused.hint, Location(message_index=refused.message_index))
