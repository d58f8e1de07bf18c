"""Loss plateau: after warmup, the train loss's last stretch is within a few percent of its first.

What it finds
    Runs with at least 20 logged train losses after warmup whose mean over the last 10 % of those points
    (at least 3) is within 3 % of the mean over the first 10 %. Warmup ends where the logged LR first
    reaches its peak (else the first 10 % of steps, axolotl's 5-10 % warmup advice). Preference and RL
    runs are left to RN031 and the reward checks.

Why it matters for training
    A fine-tuning loss that does not move means the optimizer is not changing the model: the LR is far
    too low (or 0 after a broken schedule), the trainable parameters are frozen or not in the optimizer,
    or every step is skipped (fp16 overflow). The message gives the peak LR and the warmup share.

Example
    ``steps 10-1000: the loss went from 2.31 to 2.29 (-0.9 %) after warmup; peak LR 1e-08, warmup 10 % of
    the run``.

Fix
    Check the learning rate (``learning_rate``; ``mldebug lr-plot``), that LoRA/trainable parameters are
    set, and that optimizer steps are not being skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import after, fmt, hit, mean, points_where, warmup_end_step
from mldebug_cli.sources.runlog.model import SFT

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_points": 20, "stretch_share": 0.1, "min_stretch": 3, "tolerance": 0.03}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss = subject.get("loss")
    if loss is None or subject.kind != SFT:
        return
    warm = warmup_end_step(subject)
    start = after(loss, warm)
    points = points_where(loss, lambda v: True, start)
    if len(points) < ctx.limit("min_points"):
        return
    size = max(int(ctx.limit("min_stretch")), int(len(points) * ctx.limit("stretch_share")))
    first, last = mean(loss.values[i] for i in points[:size]), mean(loss.values[i] for i in points[-size:])
    if first <= 0:
        return
    change = (last - first) / first
    if abs(change) > ctx.limit("tolerance"):
        return
    yield hit(subject, loss, points[0], points[-1],
              f"the loss went from {fmt(first)} to {fmt(last)} ({change:+.1%}) after warmup{_lr(subject, warm)}",
              f"check the learning rate ({ctx.config_key('learning_rate')}; `mldebug lr-plot`), that trainable "
              "parameters are in the optimizer, and that steps are not skipped")


def _lr(run, warm: int) -> str:
    lr = run.get("learning_rate")
    last = run.last_step or 0
    share = f", warmup {warm / last:.0%} of the run" if last else ""
    if lr is None:
        return share
    finite = [v for v in lr.values if v == v]
    return f"; peak LR {fmt(max(finite))}{share}" if finite else share
