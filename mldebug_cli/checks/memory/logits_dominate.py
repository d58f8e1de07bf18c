"""The logits and the loss are the largest memory term.

What it finds
    The term for the language-model head's output and loss is the largest of the estimate: the full
    ``tokens × vocab`` logits upcast to fp32 with the log-softmax and its gradients (transformers'
    own loss, axolotl and LLaMA-Factory without Liger or cut cross-entropy), or for GRPO the
    ``per_device_train_batch_size`` completions of a micro-batch, completion tokens only (TRL's
    ``logits_to_keep``; the batch already counts completions, so not ``batch · num_generations``).
    The message gives the formula and the values.

Why it matters for training
    With a 150k-token vocabulary the logits outgrow the model: 8 × 2,048 tokens × 151,936 × 12 bytes
    is 28 GiB for a 0.5B model. A fused or chunked loss never holds them whole.

Example
    Qwen2.5-0.5B through the Trainer's own loss, 4 × 512 tokens: 3.5 GiB of logits for 1.8 GiB of weights.

Fix
    Use a fused loss: TRL 1.16 computes every trainer's log-probs in chunks already; axolotl
    ``plugins: [axolotl.integrations.cut_cross_entropy.CutCrossEntropyPlugin]`` with
    ``cut_cross_entropy: true`` or ``liger_fused_linear_cross_entropy: true``; LLaMA-Factory
    ``enable_liger_kernel: true``; or a smaller micro-batch.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import at_batch, g
from mldebug_cli.core.findings import Hit
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "info"
SUBJECT = "memory"


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    term = review.peak.term("logits and loss")
    if term is None or review.peak.largest.name != term.name:
        return
    yield Hit(
        message=f"logits and loss are the largest term: {g(term.bytes)} = {term.formula}",
        hint="use a fused loss (cut cross-entropy, Liger's fused linear cross-entropy) or a smaller micro-batch",
        location=at_batch(review),
    )
