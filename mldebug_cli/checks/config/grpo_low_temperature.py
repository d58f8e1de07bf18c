"""GRPO samples its completions at a temperature below 0.8.

What it finds
    A GRPO config whose sampling ``temperature`` (TRL's key, axolotl's ``trl.temperature``; GRPOConfig's default
    is 1.0) is below 0.8, the low end of what axolotl's training-stability guide advises
    (https://docs.axolotl.ai/docs/training_stability.html, "RL/GRPO Stability > Entropy Collapse": "Increase
    temperature in generation kwargs (try 0.8--1.0)").

Why it matters for training
    A low temperature makes the completions of a prompt alike: their rewards tie (no variance, RN021) and the
    policy's entropy falls toward mode collapse (RN022).

Example
    ``temperature: 0.3``: most groups of completions are near copies.

Fix
    Sample at 0.8-1.0.
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
THRESHOLDS = {"min_temperature": 0.8}


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.task != "grpo" or facts.loss.policy is None:
        return
    temperature, low = facts.loss.policy.temperature, THRESHOLDS["min_temperature"]
    if temperature >= low:
        return
    key = facts.stability.policy_key_prefix + "temperature"
    yield Hit(
        message=f"GRPO samples at temperature {temperature:g}: completions of a prompt come out alike, rewards tie "
                "and entropy collapses",
        hint=f"set {key} to 0.8-1.0",
        location=at_setting(review, "temperature", key),
    )
