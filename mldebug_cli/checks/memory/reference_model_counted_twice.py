"""The reference model of a DPO/KTO/GRPO run is a full second copy of the weights.

What it finds
    A preference or RL trainer that keeps its reference policy as a second model in GPU memory:
    TRL's DPO/KTO without PEFT (and GRPO with ``beta > 0``) load it with ``create_model_from_path``.
    With a LoRA adapter the trainer disables the adapter instead, and ``precompute_ref_log_probs``
    computes the reference log-probs once before training.

Why it matters for training
    The copy costs as much as the weights again (2 bytes per parameter in bf16) for log-probs that
    an adapter-disabled forward or a precomputation gives for free.

Example
    ``DPOConfig`` on Qwen2.5-7B, full fine-tuning: 14.2 GiB of reference weights beside the policy's.

Fix
    Train a LoRA adapter (the reference is the adapter disabled), or set
    ``precompute_ref_log_probs: true``; for GRPO, ``beta: 0.0`` (TRL's default) needs no reference.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import g
from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "info"
SUBJECT = "memory"


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    term = review.peak.term("reference model")
    if term is None:
        return
    task = review.peak.setup.task
    hint = ("beta: 0.0 needs no reference model, or train a LoRA adapter (the reference is the adapter disabled)"
            if task == "grpo" else
            "set precompute_ref_log_probs: true, or train a LoRA adapter (the reference is the adapter disabled)")
    yield Hit(
        message=f"the {task.upper()} reference model is a second copy of the weights: {g(term.bytes)} per GPU",
        hint=hint,
        location=Location(key=review.key("reference_model", "beta" if task == "grpo" else "precompute_ref_log_probs")),
    )
