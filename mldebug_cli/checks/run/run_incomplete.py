"""Run incomplete: the log ends before the planned steps.

What it finds
    The last logged step is short of the planned total (``max_steps`` of trainer_state.json, LLaMA-Factory's
    ``total_steps``, the progress bar's total, or the config) by more than one logging interval. The
    message says whether it ended inside warmup (the logged LR still rising).

Why it matters for training
    A run that stopped early (crash, preemption, out of memory, a time limit, an early-stopping callback)
    has a checkpoint that is not the trained model; inside warmup it has barely started. A checkpoint's
    trainer_state.json also ends at the checkpoint: pass the output folder to read the newest one.

Example
    ``the log ends at step 600 of 692 planned (87 %)``.

Fix
    Resume from the last checkpoint (``resume_from_checkpoint``), or read the job's error log for why it
    stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import run_hit, warmup_end_step
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "info"
SUBJECT = "run"
THRESHOLDS: dict[str, float] = {}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    planned = subject.meta.get("max_steps") or ctx.config_value("max_steps")
    last = subject.last_step
    if not isinstance(planned, int) or planned <= 0 or last is None:
        return
    logged = subject.meta.get("logging_steps")
    interval = logged if isinstance(logged, int) else 1
    global_step = subject.meta.get("global_step")
    reached = max(last, global_step) if isinstance(global_step, int) else last
    if planned - reached <= max(interval, 1) or subject.meta.get("train_runtime") is not None:
        return
    warm = warmup_end_step(subject)
    inside = " inside warmup (the LR was still rising)" if warm and reached < warm else ""
    yield run_hit(subject, f"the log ends at step {reached} of {planned} planned ({reached / planned:.0%}){inside}",
                  "resume from the last checkpoint (resume_from_checkpoint) or read the job's log for why it "
                  "stopped; for a checkpoint, pass the output folder to read the newest state",
                  step=reached, severity=Severity.INFO)
