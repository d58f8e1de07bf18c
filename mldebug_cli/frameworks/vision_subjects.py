"""What the vision checks look at beside each row (a ``frameworks.trl.vision.VisionRow``): the run's setup."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VisionSetup:
    """What the vision checks compare each row with."""

    dataset_path: str
    max_length: int | None
    image_token: str
    image_token_id: int
    assistant_header: str  # the text the template puts before an assistant reply, after its last special token
    processor: str
