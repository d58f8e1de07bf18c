"""GRPO samples fewer than 16 completions per prompt.

What it finds
    A GRPO config whose ``num_generations`` (TRL's key, axolotl's ``trl.num_generations``; both default to
    GRPOConfig's 8) is below 16, the value axolotl's training-stability guide names
    (https://docs.axolotl.ai/docs/training_stability.html, "RL/GRPO Stability > Entropy Collapse": "Check that
    num_generations is sufficient (16+ gives better advantage estimates)").

Why it matters for training
    GRPO's advantage is each completion's reward against its group's mean and spread. With few completions the
    estimate is noisy and more groups score all alike (``frac_reward_zero_std`` near 1, RN021), so fewer prompts
    give any gradient.

Example
    ``num_generations: 4``: a group of four binary rewards is all-equal often.

Fix
    Raise ``num_generations`` to 16 (keep ``generation_batch_size`` divisible by it), lowering
    ``per_device_train_batch_size`` or the completion length if memory is short.
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
THRESHOLDS = {"min_generations": 16}


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    wanted = THRESHOLDS["min_generations"]
    if facts is None or facts.task != "grpo" or facts.num_generations is None or facts.num_generations >= wanted:
        return
    key = facts.stability.policy_key_prefix + "num_generations"
    yield Hit(
        message=f"num_generations is {facts.num_generations}: GRPO's advantages come from groups of "
                f"{facts.num_generations} completions per prompt (the guide: {wanted}+ gives better estimates)",
        hint=f"set {key}: {wanted} (generation_batch_size must stay divisible by it)",
        location=at_setting(review, "num_generations", key),
    )
