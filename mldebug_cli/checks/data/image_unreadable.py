"""What it finds
An image of a row that cannot be used: the file is missing, unreadable, not an image, over the pixel limit (a
decompression bomb), refused by the image processor (an aspect ratio over 200), or a URL. One finding per row; the
other rows are checked.

Why it matters for training
The collator opens the images of each batch while training runs: a missing or broken image raises in the middle of
the run (hours in, for a row near the end), and Pillow refuses images over its pixel limit.

Example
`"images": ["photos/0042.jpg"]` where `photos/0042.jpg` is not beside the dataset, or a PNG file cut short.

Fix
Repair or remove the row; paths are read relative to the dataset's folder (TRL opens string paths with transformers'
`load_image`, relative to the working directory: run from the dataset's folder or give absolute paths).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trl.vision import VisionRow
    from mldebug_cli.frameworks.vision_subjects import VisionSetup

SEVERITY = "error"
SUBJECT = "vision-row"


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    if not row.image_problems:
        return
    index, problem = row.image_problems[0]
    more = len(row.image_problems) - 1
    also = f" (and {more} more of its images)" if more else ""
    yield Hit(f"image {index} ({problem.source}) {problem.what}{also}",
              "repair or replace the image, or drop the row; the run fails when its batch is collated")
