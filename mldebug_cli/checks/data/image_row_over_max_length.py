"""What it finds
A row whose text fits `max_length` but whose images push it over: the images, not the words, make it too long.

Why it matters for training
Truncation cuts the end of the row (the answer, its end-of-turn token) or an image's tokens; either way the row does
not train what it says. The row's length is its real length, each image expanded to its tokens.

Example
A 300-token conversation with a 1024x1024 image (1,369 Qwen2-VL tokens) at `max_length` 1024.

Fix
Lower the processor's `max_pixels` (fewer tokens per image), raise `max_length`, or split the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trl.vision import VisionRow
    from mldebug_cli.frameworks.vision_subjects import VisionSetup

SEVERITY = "warning"
SUBJECT = "vision-row"


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    limit = setup.max_length
    if limit is None or not row.images or row.full_length <= limit or row.text_length > limit:
        return
    image_tokens = row.full_length - row.text_length
    yield Hit(f"the row is {row.full_length} tokens, {image_tokens} of them for {len(row.images)} image(s): its text "
              f"({row.text_length} tokens) fits max_length {limit}, its images do not",
              f"lower the processor's max_pixels or raise max_length to {row.full_length}")
