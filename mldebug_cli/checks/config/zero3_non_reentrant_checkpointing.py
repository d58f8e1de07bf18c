"""DeepSpeed ZeRO-3 with non-reentrant gradient checkpointing.

What it finds
    A config that runs DeepSpeed ZeRO stage 3 with gradient checkpointing in its non-reentrant form: set so in
    ``gradient_checkpointing_kwargs``, or by the framework's default. transformers 5 defaults to
    ``use_reentrant: False`` when no kwargs are given (``PreTrainedModel._activation_checkpointing_enable``), and
    so do TRL's trainers; axolotl makes it reentrant by default except in RL configs (``rl:``) and with
    ``unfrozen_parameters``, where its builder passes ``use_reentrant: False`` (axolotl 0.18
    ``utils/config/__init__.py``, ``core/builders/base.py``); LLaMA-Factory's ``use_reentrant_gc`` defaults to
    reentrant. TRL's GRPOTrainer forces the reentrant form itself for a PEFT model under ZeRO-3, so that pair is
    not reported.

Why it matters for training
    ZeRO-3 gathers and frees each parameter around its use; the non-reentrant checkpoint recomputation sees a
    different number of saved tensors and stops the run in the first backward pass with ``CheckpointError``
    (axolotl's training-stability guide, https://docs.axolotl.ai/docs/training_stability.html, "OOM Debugging >
    Step 2" and the "Common Errors" table). RN040 names the error after the fact.

Example
    ``deepspeed: zero3_bf16.json`` and ``gradient_checkpointing: true`` in a TRL SFT config without kwargs.

Fix
    Set ``gradient_checkpointing_kwargs: {use_reentrant: true}``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "error"
SUBJECT = "config"


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.deepspeed is None or facts.deepspeed.zero_stage != 3 or not facts.gradient_checkpointing:
        return
    if facts.gradient_checkpointing_kwargs.get("use_reentrant", False):
        return
    if facts.stability.grpo_forces_reentrant and facts.task == "grpo" and facts.peft is not None:
        return
    given = "use_reentrant" in facts.gradient_checkpointing_kwargs
    why = "gradient_checkpointing_kwargs sets use_reentrant: false" if given else (
        f"{facts.framework} checkpoints non-reentrantly when no use_reentrant is given")
    yield Hit(
        message=f"DeepSpeed ZeRO-3 with non-reentrant gradient checkpointing ({why}): the first backward pass stops "
                "with CheckpointError",
        hint="set gradient_checkpointing_kwargs: {use_reentrant: true}",
        location=at_setting(review, "gradient_checkpointing_kwargs", "gradient_checkpointing_kwargs"),
    )
