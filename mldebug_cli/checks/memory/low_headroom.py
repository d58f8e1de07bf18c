"""The estimated peak is within 10% of the GPU's memory.

What it finds
    A peak per GPU (allocated memory, the allocator's reserve and the CUDA context) above 90% of the
    GPU's memory but not over it.

Why it matters for training
    The estimate is within a few percent of PyTorch's own peak on the goldens, but fragmentation grows
    over a long run (variable-length batches leave holes in the allocator's cache), and another process
    on the GPU, a longer batch than the ones read, or an evaluation step can tip it over.

Example
    A 71 GiB estimate on an 80 GB card (79.6 GiB usable).

Fix
    Take the first fix `mldebug memory` lists, or set
    ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` to cut fragmentation.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.memory import at_batch, g, gpu_label
from mldebug_cli.core.findings import Hit
from mldebug_cli.memory.review import MemoryReview

SEVERITY = "warning"
SUBJECT = "memory"
THRESHOLDS = {"headroom": 0.10}


def run(review: MemoryReview, ctx: None) -> Iterator[Hit]:
    if review.gpu_bytes is None:
        return
    peak = review.peak.per_gpu
    if not (1 - THRESHOLDS["headroom"]) * review.gpu_bytes < peak <= review.gpu_bytes:
        return
    fix = review.fixes[0] if review.fixes else None
    yield Hit(
        message=f"estimated peak {g(peak)} per GPU leaves {g(review.gpu_bytes - peak)} "
                f"({(review.gpu_bytes - peak) / review.gpu_bytes:.0%}) of {gpu_label(review)}",
        hint=(f"{fix.change}: {g(fix.before)} → {g(fix.after)}" if fix else
              "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation"),
        location=at_batch(review),
    )
