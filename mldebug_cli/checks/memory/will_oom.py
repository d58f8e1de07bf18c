"""The estimated peak GPU memory of a step exceeds the GPU's memory.

What it finds
    The largest micro-batch of the data (padded as the framework's collator pads it), the weights,
    gradients, optimizer states, activations (with or without gradient checkpointing, per attention
    implementation), the logits and loss as the framework computes them, a reference model or generation
    KV cache where the trainer keeps one, the CUDA context and the allocator's reserve, summed per GPU
    after ZeRO/FSDP sharding, against the GPU given by ``--gpu`` or ``--gpu-memory``. The message names the
    term that dominates and the step and rows of the peak batch; the hint gives the first fix that makes
    it fit, with its new estimate.

Why it matters for training
    A CUDA out-of-memory error stops the run, often late: at the one step where the longest rows meet.
    Estimators that count weights and optimizer states only (batch size 1, no activations) say it fits.

Example
    Qwen2.5-1.5B, full fine-tuning, fp32 weights with bf16 autocast, ``per_device_train_batch_size: 20``,
    2,048-token rows, sdpa, no gradient checkpointing: about 217 GiB allocated, mostly the activations of 28
    layers and the fp32 log-softmax of 40,960 × 151,936 logits; the real Trainer ran out of memory on a 141 GB
    H200 (fixtures/memory-goldens/hf-q15-full-oom.json).

Fix
    Apply the first fix listed (smaller micro-batch with more accumulation, gradient checkpointing,
    LoRA or 4-bit, a shorter ``max_length``, flash attention, ZeRO-3); ``mldebug memory`` shows the
    estimate after each.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import at_batch, first_fitting_fix, g, gpu_label, peak_place
from mldebug_cli.core.findings import Hit
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "error"
SUBJECT = "memory"


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    if review.gpu_bytes is None or review.peak.per_gpu <= review.gpu_bytes:
        return
    largest = review.peak.largest
    fix = first_fitting_fix(review)
    hint = (f"{fix.change}: {g(fix.before)} → {g(fix.after)}" + (f" ({fix.note})" if fix.note else "")
            if fix else "no single change makes it fit: combine the fixes `mldebug memory` lists, or use more GPUs")
    yield Hit(
        message=f"estimated peak {g(review.peak.per_gpu)} per GPU exceeds {gpu_label(review)}: "
                f"{largest.name} {g(largest.bytes)} is the largest term; {peak_place(review)}",
        hint=hint,
        location=at_batch(review),
    )
