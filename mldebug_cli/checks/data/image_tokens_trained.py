"""What it finds
Image placeholder tokens (e.g. Qwen2-VL's `<|image_pad|>`) among a row's trained labels.

Why it matters for training
The model is asked to predict placeholder ids whose inputs are replaced by image features: the loss on them is noise
that grows with image size (a photo is hundreds to thousands of tokens against a short answer) and teaches the model
to emit placeholders. TRL 1.16's vision collator sets labels to the input ids and masks only padding.

Example
A row with one 448x448 image trains 256 `<|image_pad|>` labels beside a 12-token reply.

Fix
Mask the image tokens (a custom collator that sets labels of the image token id to -100), or train on the assistant
turns only (`assistant_only_loss: true` with a template that has `{% generation %}` markers).
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
    trained = sum(1 for label in row.labels if label == setup.image_token_id)
    if not trained:
        return
    total = sum(1 for label in row.labels if label >= 0)
    yield Hit(f"{trained} of the row's {total} trained labels are {setup.image_token} image tokens",
              "mask the image token id in the labels (-100) or train on the assistant turns only")
