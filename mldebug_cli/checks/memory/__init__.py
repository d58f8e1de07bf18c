"""MEM: GPU memory of a training config on its real data (``memory``, ``preflight``)."""

from __future__ import annotations

from mldebug_cli.core.findings import Location
from mldebug_cli.memory.estimate import GIB
from mldebug_cli.memory.review import MemoryReview


def g(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def gpu_label(review: MemoryReview) -> str:
    """"the H100-80GB's 79.6 GiB", or "the 40.0 GiB given" for --gpu-memory."""
    assert review.gpu_bytes is not None  # the checks that name the GPU run only when its size is known
    if review.gpu and review.gpu.endswith("GiB"):
        return f"the {g(review.gpu_bytes)} given"
    return f"the {review.gpu}'s {g(review.gpu_bytes)}"


def peak_place(review: MemoryReview) -> str:
    """Where the peak batch falls: its step and rows, when the data was read."""
    batch = review.batch
    if not batch.rows:
        return f"every batch is {batch.sequences} × {batch.length} tokens"
    return f"peak batch {batch.describe()}"


def at_batch(review: MemoryReview, key: str | None = None) -> Location:
    batch = review.batch
    row = batch.rows[0] if batch.rows else None
    if review.long_rows:
        row = review.long_rows[0].row
    return Location(row=row, step=batch.step, key=key)


def first_fitting_fix(review: MemoryReview):
    if review.gpu_bytes is None:
        return review.fixes[0] if review.fixes else None
    return next((f for f in review.fixes if f.after <= review.gpu_bytes), None)
