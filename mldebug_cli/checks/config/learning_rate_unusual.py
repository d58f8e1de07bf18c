"""A learning rate outside the guide's range for the training method.

What it finds
    The learning rate the trainer receives (the config's, or the framework's default) against the typical range for
    its method, from axolotl's training-stability guide (https://docs.axolotl.ai/docs/training_stability.html,
    "SFT Stability > Loss Plateau"): full fine-tuning 1e-5 to 5e-5, LoRA 1e-4 to 3e-4. The guide gives no range
    for preference and RL training; their rate is checked only against the top of the same method's SFT range
    (they train at lower rates: TRL's DPOConfig and GRPOConfig default to 1e-6). Info when outside the range, a
    warning when ten times or more outside it.

Why it matters for training
    Too low a rate plateaus (the guide: "increase by 2-5x"); too high a rate spikes the loss or diverges (the guide,
    "Loss Spikes": "reduce by 2-5x"). A LoRA rate used for a full fine-tune (2e-4) is the classic slip.

Example
    ``learning_rate: 2e-4`` with no adapter: ten times the full fine-tuning range's top.

Fix
    Start inside the method's range and move from there on the evidence of the loss curve.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit, Severity
from mldebug_cli.core.numbers import lr

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "info"
SUBJECT = "config"
THRESHOLDS = {"full_low": 1e-5, "full_high": 5e-5, "lora_low": 1e-4, "lora_high": 3e-4, "warn_factor": 10.0}
_SFT = ("sft", "pt")


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.learning_rate <= 0:
        return
    method = "LoRA" if facts.peft is not None else "full fine-tuning"
    prefix = "lora" if facts.peft is not None else "full"
    low, high = THRESHOLDS[f"{prefix}_low"], THRESHOLDS[f"{prefix}_high"]
    rate = facts.learning_rate
    if facts.task not in _SFT:
        low = 0.0  # no lower bound from the guide for preference and RL training
    if low <= rate <= high:
        return
    factor = rate / high if rate > high else low / rate
    where = "above" if rate > high else "below"
    span = f"{lr(low)}-{lr(high)}" if low else f"at most {lr(high)}"
    yield Hit(
        message=f"learning_rate {lr(rate)} is {factor:.1f}x {where} the {method} range ({span}) for this "
                f"{facts.task.upper()} run",
        hint=(f"start inside {span} for {method}" if facts.task in _SFT else
              f"{facts.task.upper()} trains at lower rates than SFT (TRL's default is 1e-6); start below {lr(high)}"),
        location=at_setting(review, "learning_rate", "learning_rate"),
        severity=Severity.WARNING if factor >= THRESHOLDS["warn_factor"] else Severity.INFO,
    )
