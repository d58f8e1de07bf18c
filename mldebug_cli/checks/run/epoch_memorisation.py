"""Epoch memorisation: the eval loss is lowest at the end of an epoch and steps up as the next one starts,
while the train loss drops in a step at the same boundary.

What it finds
    Multi-epoch runs whose logged ``epoch`` gives the steps per epoch and whose evaluations fall on both
    sides of an epoch boundary (within half an epoch). At the boundary after the run's best evaluation:
    the first evaluation of the new epoch is above the last one of the old (by 0.1 % or more), and the
    train loss drops across the boundary (mean of the half epoch before against the half epoch after) by
    at least twice what it drops inside the new epoch (first half against second half) and by 1 % or more.
    The rise is small, so RN006's rule (several rises in a row) stays silent; the epoch structure is the
    signal.

Why it matters for training
    A train loss that falls in a staircase, flat inside an epoch and a step down each time the rows come
    back, is the model recognising rows it has seen: memorisation. The held-out loss getting worse at the
    same moment says the memorising costs generalisation: every further epoch is overfitting, and the
    checkpoint at the end of the best epoch is the one to keep.

Example
    ``eval_loss is lowest at the end of epoch 2 (step 40: 1.52) and rises at the start of epoch 3 (step 44:
    1.55, +2.0%) while the train loss drops in a step at that boundary (1.61 -> 1.21; 0.03 inside epoch
    3)``.

Fix
    Train for that many epochs (``num_train_epochs``), or evaluate at every epoch end and keep the best
    checkpoint (``load_best_model_at_end``); more rows, a lower LR or more regularisation (dropout, weight
    decay) move the turn later.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_rise": 0.001, "step_factor": 2.0, "min_drop": 0.01}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    evals, loss, epoch = subject.get("eval_loss"), subject.get("loss"), subject.get("epoch")
    if evals is None or loss is None or epoch is None or len(evals) < 3:
        return
    per_epoch = _steps_per_epoch(epoch)
    if per_epoch is None or per_epoch < 2:
        return
    finite = [(s, v) for s, v in zip(evals.steps, evals.values) if math.isfinite(v)]
    if len(finite) < 3:
        return
    best_step, best = min(finite, key=lambda p: p[1])
    boundary = _boundary_ending_at(best_step, per_epoch)
    if boundary is None:
        return
    half = per_epoch / 2
    after = [(s, v) for s, v in finite if boundary < s <= boundary + half]
    if not after:
        return
    next_step, next_value = after[0]
    if next_value < best * (1 + ctx.limit("min_rise")):
        return
    before_train = _train_between(loss, boundary - half, boundary)
    after_train = _train_between(loss, boundary, boundary + half)
    later_train = _train_between(loss, boundary + half, boundary + per_epoch)
    if not (before_train and after_train and later_train):
        return
    drop = mean(before_train) - mean(after_train)
    inside = max(mean(after_train) - mean(later_train), 0.0)
    if drop < ctx.limit("min_drop") * mean(before_train) or drop < ctx.limit("step_factor") * inside:
        return
    number = round(boundary / per_epoch)
    steps = list(evals.steps)
    index, end = steps.index(best_step), steps.index(next_step)
    yield hit(subject, evals, index, end,
              f"eval_loss is lowest at the end of epoch {number} (step {best_step}: {fmt(best)}) and rises at the start "
              f"of epoch {number + 1} (step {next_step}: {fmt(next_value)}, {next_value / best - 1:+.1%}) while the "
              f"train loss drops in a step at that boundary ({fmt(mean(before_train))} -> {fmt(mean(after_train))}; "
              f"{fmt(inside)} inside epoch {number + 1}): the model memorises the rows it sees again",
              f"train {number} epoch{'s' if number != 1 else ''} ({_key(ctx, 'num_train_epochs')}) or keep the "
              f"checkpoint of step {best_step} (load_best_model_at_end); more rows, a lower LR or more regularisation "
              "move the turn later")


def _steps_per_epoch(epoch) -> float | None:
    """Steps per epoch from the logged float epoch (HF: epoch + (step+1)/steps_in_epoch)."""
    for step, value in zip(reversed(epoch.steps), reversed(epoch.values)):
        if math.isfinite(value) and value >= 1 and step > 0:
            return step / value
    return None


def _boundary_ending_at(step: int, per_epoch: float) -> float | None:
    """The epoch boundary a step is at or within a quarter epoch before, else None."""
    boundary = math.ceil(step / per_epoch - 1e-9) * per_epoch
    return boundary if boundary > 0 and boundary - step <= per_epoch / 4 + 1e-9 else None


def _train_between(loss, low: float, high: float) -> list[float]:
    return [v for s, v in zip(loss.steps, loss.values) if low < s <= high and math.isfinite(v)]


def _key(ctx, key: str) -> str:
    return ctx.config_key(key)
