"""Eval below train: the eval loss is far below the train loss at the same step.

What it finds
    Runs where the eval loss is below half the train loss logged at or just before the same step at most
    evaluations (at least 2). When the ratio is close to a power of two, RN009 (a logged loss multiplied
    by gradient accumulation) is the likelier reading and this check stays silent.

    A second rule reads the run's last evaluation after many epochs (the usual single eval at the end):
    after at least 3 epochs over the training rows a held-out eval loss is above the train loss (the model
    has fitted the rows it saw); an eval loss at or below the train loss there says the eval rows are the
    training rows (the eval, run after the window's last step, scores the rows the model just fitted). The
    eval token accuracy, when logged, is quoted. A short run that logged no train loss before its eval (the
    HF Trainer logs every 500 steps by default) has only the run's mean train loss (``train_loss``), which
    the early steps lift: there the eval loss must be below 0.75× that mean (held-out evals of our runs sit
    at 0.93× to 1.65× of it, an eval on the training rows at 0.54×).

Why it matters for training
    Dropout and averaging make the eval loss a little lower than the train loss, never half of it. An eval
    set that overlaps the training rows (the same file, or a split taken after shuffling duplicates) makes
    the eval loss useless for early stopping and model selection.

Example
    ``eval_loss 0.41 vs train loss 1.02 at step 200 (below 0.5× at 4 of 5 evaluations)``.

Fix
    Split the eval set from the training set before any augmentation, and deduplicate across the splits.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import accumulation_pattern, fmt, hit, train_eval_pairs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"ratio": 0.5, "min_evals": 2, "share": 0.5, "accumulation_tolerance": 0.2, "min_epochs": 3.0,
              "mean_ratio": 0.75}
ACCURACY_KEYS = ("eval_mean_token_accuracy", "eval_accuracy")


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    pairs = train_eval_pairs(subject)
    if len(pairs) < ctx.limit("min_evals"):
        yield from _after_epochs(subject, pairs, ctx)
        return
    low = [p for p in pairs if p[2] < ctx.limit("ratio") * p[1]]
    if len(low) < max(ctx.limit("min_evals"), ctx.limit("share") * len(pairs)):
        yield from _after_epochs(subject, pairs, ctx)
        return
    if _scaled(pairs, ctx):
        return  # RN009's pattern: a train loss logged × accumulation
    i, train, value = low[0]
    evals = subject.get("eval_loss")
    assert evals is not None  # the pairs are read from it
    yield hit(subject, evals, low[0][0], low[-1][0],
              f"eval_loss {fmt(value)} vs train loss {fmt(train)} at step {evals.steps[i]} (below "
              f"{ctx.limit('ratio'):g}× at {len(low)} of {len(pairs)} evaluations)",
              "the eval set likely overlaps the training rows: split before augmenting and deduplicate across splits")


def _scaled(pairs, ctx) -> bool:
    accumulation = ctx.config_value("gradient_accumulation_steps")
    return accumulation_pattern(pairs, accumulation, ctx.limit("accumulation_tolerance"), ctx.limit("share"),
                                ctx.limit("min_evals")) is not None


def _after_epochs(subject, pairs, ctx):
    """The last evaluation, after many epochs, at or below the train loss."""
    epoch, evals = subject.get("epoch"), subject.get("eval_loss")
    if epoch is None or evals is None or (pairs and _scaled(pairs, ctx)):
        return
    mean = None
    if pairs:
        i, train, value = pairs[-1]
    else:  # no train loss logged by the eval: the run's mean, well above the loss its last steps reached
        i, value, mean = len(evals) - 1, evals.values[-1], _mean_train_loss(subject)
        if mean is None or not math.isfinite(value) or value <= 0:
            return
        train = mean
    step = evals.steps[i]
    epochs = _epochs_by(epoch, step)
    if epochs is None or not epochs >= ctx.limit("min_epochs"):
        return
    if value > (train if mean is None else ctx.limit("mean_ratio") * mean):
        return
    accuracy = next((a for key in ACCURACY_KEYS if (series := subject.get(key)) is not None
                     and (a := series.value_at(step)) is not None), None)
    said = f", eval token accuracy {fmt(accuracy)}" if accuracy is not None else ""
    yield hit(subject, evals, i, i,
              (f"after {fmt(epochs)} epochs eval_loss {fmt(value)} is at or below the train loss {fmt(train)} at step "
               f"{step}{said}: a held-out set is above the train loss by then; these eval rows are the training rows"
               if mean is None else
               f"after {fmt(epochs)} epochs eval_loss {fmt(value)} at step {step} is below "
               f"{ctx.limit('mean_ratio'):g}× the run's mean train loss {fmt(mean)} (no train loss was logged by then)"
               f"{said}: a held-out set is not that far below it; these eval rows are the training rows"),
              "evaluate on rows held out from training (split before shuffling or augmenting, deduplicate across "
              "the splits); this eval loss cannot choose a checkpoint")


def _epochs_by(epoch, step: int) -> float | None:
    """The epochs done by ``step``: logged there, else the last logged before it (an evaluate() after training is
    logged at a step the training entries never reach, e.g. from TensorBoard beside trainer_state.json)."""
    from bisect import bisect_right

    at = epoch.value_at(step)
    if at is not None:
        return at
    i = bisect_right(epoch.steps, step)
    return epoch.values[i - 1] if i else None


def _mean_train_loss(subject) -> float | None:
    """The run's mean train loss (the trainer's final ``train_loss``), as a series point or the summary entry."""
    series = subject.get("train_loss")
    value = series.values[-1] if series is not None else subject.meta.get("train_loss")
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) and value > 0 else None
