"""A LoRA rank outside the usual 8-32.

What it finds
    A LoRA/QLoRA config whose rank (``lora_r`` in TRL and axolotl, ``lora_rank`` in LLaMA-Factory, or the
    framework's default) is below 8 or above 32, the typical values in axolotl's training-stability guide
    (https://docs.axolotl.ai/docs/training_stability.html, "SFT Stability > Overfitting": "Use a smaller LoRA rank
    (lora_r). Typical values: 8--32").

Why it matters for training
    A high rank gives the adapter the capacity to memorise a small dataset (the guide's overfitting fix is a
    smaller rank); a rank below 8 may be too small for the task to move the loss. Neither is wrong for every run,
    so the finding is informational.

Example
    ``lora_r: 256`` on 2,000 rows.

Fix
    Start at 8-32 and raise the rank only when the eval loss says the adapter is too small.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "info"
SUBJECT = "config"
THRESHOLDS = {"min_rank": 8, "max_rank": 32}


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.peft is None or facts.peft.r is None:
        return
    low, high, rank = THRESHOLDS["min_rank"], THRESHOLDS["max_rank"], facts.peft.r
    if low <= rank <= high:
        return
    risk = "capacity to memorise a small dataset (overfitting)" if rank > high else "may be too small to move the loss"
    yield Hit(
        message=f"LoRA rank {rank} is outside the usual {low}-{high}: {risk}",
        hint=f"start at a rank of {low}-{high} and change it on the evidence of the eval loss",
        location=at_setting(review, "lora_r", "lora_r"),
    )
