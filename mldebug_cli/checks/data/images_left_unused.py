"""What it finds
A vision-language row whose `images` (or `image`) column holds more images than the framework uses: axolotl's
multimodal collator (0.19.0, `ProcessingStrategy.__call__`) takes the column's first image only and logs a warning.

Why it matters for training
The other images never reach the model: a row written to compare two pictures trains on one of them, and its answer
then describes a picture the model never saw. Nothing fails, so the loss looks normal.

Example
Under axolotl, a row with `"images": ["a.png", "b.png"]` and one `{"type": "image"}` part: `b.png` is dropped.

Fix
Put each image into the messages as its own part (`{"type": "image", "path": "b.png"}`, axolotl's multi-content
format, which transformers loads), or keep one image per row.
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
    if row.unused_images:
        yield Hit(f"the images column holds {row.unused_images + 1} images: the framework uses the first only, and "
                  f"{row.unused_images} never reach the model",
                  'give each image its own {"type": "image", "path": ...} part in the messages, or one image per row')
