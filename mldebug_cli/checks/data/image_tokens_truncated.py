"""What it finds
A row that `max_length` cuts inside (or before) an image's tokens, or cuts an image token typed into its text.

Why it matters for training
The processor counts the image tokens it wrote and the ones left after truncation; when they differ it raises
`ValueError: Mismatch in image token count between text and input_ids` (and models that check raise "Image features
and image tokens do not match"): the run fails at the first batch holding the row.

Example
A Qwen2-VL row of 900 text tokens with a 1280x960 photo (1,564 image tokens) at `max_length` 1024.

Fix
Raise `max_length` above the row's length, shrink the images (`max_pixels` in the processor) or drop the row.
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


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    cut = row.cut_images
    if not cut and row.cut_literal > 0:  # image tokens typed into the text, cut: the processor's count differs too
        yield Hit(f"max_length {setup.max_length} cuts {row.cut_literal} {setup.image_token} token(s) written in the "
                  f"row's text, the row is {row.full_length} tokens: {row.cut_consequence}",
                  f"take the {setup.image_token} text out of the row, or raise max_length to at least {row.full_length}",
                  Location())
        return
    if not cut:
        return
    first = cut[0]
    kept = row.kept_tokens(first)
    yield Hit(f"max_length {setup.max_length} cuts image {first.index} ({first.source}): {kept} of its {first.tokens} "
              f"tokens kept, the row is {row.full_length} tokens: {row.cut_consequence}",
              f"raise max_length to at least {row.full_length}, lower the processor's max_pixels, or drop the row",
              Location(message_index=first.message_index))
