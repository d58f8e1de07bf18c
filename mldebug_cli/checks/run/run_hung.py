"""Run hung: the log's clock goes on after its last step, with no error and no progress.

What it finds
    Console logs with time stamps (``2026-04-17 14:29:31`` at the start of a line, as Python's logging
    and most launchers write them) whose stamps go on after the last metric record for at least 10 times
    the run's own time per logged point and at least 10 minutes (torch's default NCCL collective timeout),
    with no error line after that record and no final summary. A log that ends in an error is RN040's.

Why it matters for training
    A hang burns the allocation without a traceback: a rank waiting in a collective the others never
    reach (uneven data, eval or save on one rank), an FSDP prefetch deadlock, a dead dataloader worker.
    Nothing in the metrics says so; only the clock does.

Example
    ``the last metric record is at line 1204; the log goes on to 2026-04-17 16:02:10 (line 1262), 52 min
    later, 87× the run's 36 s per logged point, with no step and no error: a hang``.

Fix
    Dump the stacks of every rank (``py-spy dump --pid``), set ``TORCH_NCCL_DESYNC_DEBUG=1`` and a shorter
    ``ddp_timeout`` to turn the hang into an error that names the collective; make every rank run the same
    collectives (eval and save on all ranks), and use ``dataloader_num_workers=0`` to rule out a dead worker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import run_hit

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"factor": 10.0, "min_seconds": 600}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    meta = subject.meta
    waited, per_point, line = meta.get("stalled_seconds"), meta.get("seconds_per_point"), meta.get("stalled_line")
    if not isinstance(waited, int) or not isinstance(per_point, (int, float)) or per_point <= 0:
        return
    if meta.get("train_runtime") is not None:
        return  # the Trainer printed its final summary: training finished
    last_metric = meta.get("last_metric_line") or 0
    if any(e.line > last_metric and e.kind != "template-boundary" for e in meta.get("errors") or ()):
        return  # it ended in an error: RN040
    if waited < ctx.limit("min_seconds") or waited < ctx.limit("factor") * per_point:
        return
    yield run_hit(subject, f"the last metric record is at line {last_metric}; the log's time stamps go on to line "
                  f"{line}, {_duration(waited)} later ({waited / per_point:.0f}× the run's {_duration(per_point)} per "
                  "logged point) with no step and no error: a hang",
                  "dump every rank's stack (py-spy dump), set TORCH_NCCL_DESYNC_DEBUG=1 and a shorter ddp_timeout so "
                  "the hang names its collective; run eval and save on all ranks", line=line)


def _duration(seconds: float) -> str:
    if seconds >= 7200:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"
