"""The run's logged peak GPU memory against mldebug memory's estimate for its config.

What it finds
    With ``check-run --config``, the peak GPU memory the run logged (the metric RN042 reads: axolotl's
    ``memory/device_reserved (GiB)`` or ``memory/max_allocated (GiB)``, the guide's ``memory/max_reserved`` or
    ``memory/max_alloc``, torchtune's ``peak_memory_reserved`` or ``peak_memory_alloc``) beside ``mldebug memory``'s estimate for the same config on its rows, per GPU: the
    allocated peak for an allocated metric, the allocated peak with the allocator's reserve for a reserved one. One
    line says the difference: information when it is within 10% of the estimate, a warning when further.

Why it matters for training
    Every run that logs its memory is a free test of the estimate the next run is planned with (the micro-batch,
    the max length, whether it fits the card). A logged peak far from the estimate means the run is not the config
    as mldebug read it (another micro-batch, checkpointing, model or max length on the command line), or the
    estimate misses a term (a kernel's workspace, a framework's own buffers): the next ``memory`` verdict for this
    setup should not be trusted until the difference is explained.

Example
    ``memory/max_allocated (GiB): 31.0`` logged; ``mldebug memory`` estimates 15.2 GiB allocated for the config:
    the run used 2.0× the estimate.

Fix
    Run ``mldebug memory --config CONFIG`` and compare its terms and its "assumed" line with how the run was started;
    pass ``--model`` when the config's model is not the one trained. A difference that remains is a gap in the
    estimate: report it with the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import hit, is_reserved, logged_peak, unit_note
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_difference": 0.1}  # the share of the estimate within which the two agree (MEM002's headroom)
GIB = 2**30


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    found = logged_peak(subject)
    estimate = ctx.memory_estimate
    if found is None or estimate is None:
        return
    series, index = found
    logged = series.values[index]
    reserved = is_reserved(series.key)
    expected = (estimate.reserved if reserved else estimate.allocated) / GIB
    if expected <= 0:
        return
    difference = logged / expected - 1
    what = "reserved (allocated with the allocator's reserve)" if reserved else "allocated"
    said = f"{abs(difference):.0%} {'above' if difference >= 0 else 'below'}"
    close = abs(difference) <= ctx.limit("max_difference")
    yield hit(subject, series, index, None,
              f"{series.key} peaked at {logged:.2f} GiB at step {series.steps[index]}, {said} mldebug memory's estimate "
              f"of {expected:.2f} GiB {what} for {estimate.config} (largest term: {estimate.largest_term})"
              f"{unit_note(series.key)}",
              "the estimate holds for this setup" if close else
              f"compare `mldebug memory --config {estimate.config}` (its terms and assumptions) with how the run was "
              "started: another micro-batch, max length, checkpointing or model; a difference that remains is a gap "
              "in the estimate",
              severity=Severity.INFO if close else None)
