"""FSDP with axolotl's asynchronous rollout prefetch: a known multi-GPU hang.

What it finds
    An axolotl config that shards the model with FSDP (``fsdp``/``fsdp_config``) and turns on
    ``trl.async_prefetch`` (rollouts generated in a background thread while training on the previous ones; axolotl
    0.18 ``utils/schemas/trl.py``).

Why it matters for training
    axolotl's training-stability guide (https://docs.axolotl.ai/docs/training_stability.html, "Common Errors")
    lists "Training hangs (multi-GPU): FSDP + async prefetch deadlock": the run stops advancing without an error
    (RN041 sees it only after the fact, from the log).

Example
    ``fsdp_config: {fsdp_version: 2}`` with ``trl: {async_prefetch: true}`` on 4 GPUs.

Fix
    Set ``trl.async_prefetch: false`` with FSDP (or train with DeepSpeed instead).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "warning"
SUBJECT = "config"


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.fsdp is None or not facts.stability.async_prefetch:
        return
    yield Hit(
        message="FSDP with trl.async_prefetch: true: axolotl's guide lists this pair as a multi-GPU deadlock "
                "(the run hangs without an error)",
        hint="set trl.async_prefetch: false with FSDP",
        location=at_setting(review, "async_prefetch", "trl.async_prefetch"),
    )
