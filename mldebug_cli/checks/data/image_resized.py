"""What it finds
An image the processor resizes far from its source size: its area grows or shrinks more than 4 times (the processor's
`min_pixels`/`max_pixels` and patch grid decide the size the model sees).

Why it matters for training
The model sees a much blurrier (downscaled) or much blockier (upscaled) image than the file: fine text becomes
unreadable, a thumbnail costs the tokens of a photo. Worth knowing, not an error.

Example
A 4000x3000 photo is seen at 4004x2996 (15,301 tokens) under Qwen2-VL's default max_pixels; with max_pixels 200,704
it is seen at 504x364 (234 tokens), 1/65 of its area. A 16x16 icon is seen at 56x56 (min_pixels 3,136).

Fix
Resize the images yourself to what the processor uses, or set `min_pixels`/`max_pixels` in the processor so the size
the model sees is the one you want.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trl.vision import VisionRow
    from mldebug_cli.frameworks.vision_subjects import VisionSetup

SEVERITY = "info"
SUBJECT = "vision-row"
THRESHOLDS = {"area_factor": 4.0}


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    factor = THRESHOLDS["area_factor"]
    far = [image for image in row.images if image.scale > factor or image.scale < 1 / factor]
    if not far:
        return
    image = far[0]
    how = f"{image.scale:.1f}x its area" if image.scale > 1 else f"1/{1 / image.scale:.1f} of its area"
    more = f" ({len(far) - 1} more in the row)" if len(far) > 1 else ""
    yield Hit(f"image {image.index} ({image.source}) is {image.width}x{image.height}; the processor resizes it to "
              f"{image.resized_width}x{image.resized_height} ({how}, {image.tokens} tokens){more}",
              "resize the image to about the size the processor uses, or set min_pixels/max_pixels")
