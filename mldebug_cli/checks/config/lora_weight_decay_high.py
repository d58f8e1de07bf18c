"""Weight decay above 0.1 on a LoRA run.

What it finds
    A LoRA or QLoRA config (the framework's adapter keys: ``use_peft`` in TRL, ``adapter: lora|qlora`` in axolotl,
    ``finetuning_type: lora`` in LLaMA-Factory) whose ``weight_decay`` is above 0.1.

Why it matters for training
    Weight decay pulls the adapter's few, freshly initialised weights toward 0 at every step; above 0.1 it can
    cancel what the small adapter learns. axolotl's training-stability guide
    (https://docs.axolotl.ai/docs/training_stability.html, "SFT Stability > Loss Plateau") says the default 0.01 is
    usually fine and that values above 0.1 can suppress learning in LoRA.

Example
    ``adapter: lora`` with ``weight_decay: 0.5``: the loss plateaus early.

Fix
    Use ``weight_decay`` between 0 and 0.1 (0.01 is the usual choice).
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
THRESHOLDS = {"max_weight_decay": 0.1}
_METHOD = {"lora": "LoRA", "dora": "DoRA"}


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    limit = THRESHOLDS["max_weight_decay"]
    if facts is None or facts.peft is None or facts.weight_decay <= limit:
        return
    yield Hit(
        message=f"weight_decay is {facts.weight_decay:g} on a {_METHOD.get(facts.peft.method, facts.peft.method)} run: above {limit:g} it can "
                "cancel what the adapter learns (the loss plateaus)",
        hint="use weight_decay 0-0.1 with LoRA (0.01 is the usual choice)",
        location=at_setting(review, "weight_decay", "weight_decay"),
    )
