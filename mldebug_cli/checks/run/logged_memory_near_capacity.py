"""The run's logged peak GPU memory is within 10% of the GPU's size.

What it finds
    The peak GPU memory a run logged, read from axolotl's per-step metrics (``memory/device_reserved (GiB)``, which
    is ``torch.cuda.max_memory_reserved``, else ``memory/max_allocated (GiB)``: axolotl 0.18
    ``core/trainers/base.py`` and ``utils/bench.py``; the names ``memory/max_reserved`` and ``memory/max_alloc`` that
    axolotl's training-stability guide uses are read too, in GiB; so are torchtune's ``peak_memory_reserved`` and
    ``peak_memory_alloc``, GiB from torchtune 0.3.0 on), against the GPU given with ``--gpu`` or
    ``--gpu-memory``: a warning when the peak is at or above 90% of it (the headroom MEM002 asks of an estimate).
    Without a GPU the check is quiet.

Why it matters for training
    The allocator needs headroom: a longer batch later in the run, an eval step or fragmentation tips a run this
    close into ``CUDA out of memory`` (https://docs.axolotl.ai/docs/training_stability.html, "Profiling > Quick GPU
    Memory Check": these metrics are PyTorch's view of memory). The run that worked today fails on the next
    dataset.

Example
    ``memory/device_reserved (GiB): 76.1`` on an H100-80GB (79.6 GiB to PyTorch): 96% of the card.

Fix
    Lower the peak before the next run: ``mldebug memory --config`` names the term that dominates and the first fix
    that makes it fit (a smaller micro-batch with more accumulation, gradient checkpointing, a shorter max length).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import hit, logged_peak, unit_note

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_share": 0.9}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    found = logged_peak(subject)
    if ctx.gpu is None or found is None:
        return
    series, index = found
    name, size = ctx.gpu
    peak = series.values[index]
    share = peak / size
    if share < ctx.limit("max_share"):
        return
    yield hit(subject, series, index, None,
              f"{series.key} peaked at {peak:.1f} GiB at step {series.steps[index]}: {share:.0%} of the {name} "
              f"({size:g} GiB to PyTorch){unit_note(series.key)}",
              "lower the peak before the next run (mldebug memory --config names the term and the fix): a smaller "
              "micro-batch with more accumulation, gradient checkpointing or a shorter max length")
