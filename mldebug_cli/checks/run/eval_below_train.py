"""Eval below train: the eval loss is far below the train loss at the same step.

What it finds
    Runs where the eval loss is below half the train loss logged at or just before the same step at most
    evaluations (at least 2). When the ratio is close to a power of two, RN009 (a logged loss multiplied
    by gradient accumulation) is the likelier reading and this check stays silent.

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

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import accumulation_pattern, fmt, hit, train_eval_pairs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"ratio": 0.5, "min_evals": 2, "share": 0.5, "accumulation_tolerance": 0.2}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    pairs = train_eval_pairs(subject)
    if len(pairs) < ctx.limit("min_evals"):
        return
    low = [p for p in pairs if p[2] < ctx.limit("ratio") * p[1]]
    if len(low) < max(ctx.limit("min_evals"), ctx.limit("share") * len(pairs)):
        return
    accumulation = ctx.config_value("gradient_accumulation_steps")
    if accumulation_pattern(pairs, accumulation, ctx.limit("accumulation_tolerance"), ctx.limit("share"),
                            ctx.limit("min_evals")) is not None:
        return  # RN009's pattern: a train loss logged × accumulation
    i, train, value = low[0]
    evals = subject.get("eval_loss")
    yield hit(subject, evals, low[0][0], low[-1][0],
              f"eval_loss {fmt(value)} vs train loss {fmt(train)} at step {evals.steps[i]} (below "
              f"{ctx.limit('ratio'):g}× at {len(low)} of {len(pairs)} evaluations)",
              "the eval set likely overlaps the training rows: split before augmenting and deduplicate across splits")
