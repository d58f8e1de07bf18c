"""Eval loss rising: the eval loss rises for several evaluations in a row while the train loss falls.

What it finds
    Three or more consecutive evaluations each with a higher ``eval_loss`` than the one before, ending at
    least 2 % above the best eval loss, while the train loss over the same steps fell. The message gives
    the best eval step (the checkpoint to keep).

Why it matters for training
    The model is memorising the training rows (overfitting): more steps make it worse on held-out data.
    axolotl's guide expects the eval loss to "track train with a small gap".

Example
    ``steps 600-1000: eval_loss rose 4 evaluations in a row, 1.12 -> 1.31 (best 1.12 at step 600) while the
    train loss fell 0.98 -> 0.61``.

Fix
    Keep the best checkpoint (``load_best_model_at_end`` with ``metric_for_best_model: eval_loss``), train
    fewer epochs, lower the LR, add data or regularisation (LoRA dropout, weight decay), add
    ``EarlyStoppingCallback``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, last_finite_at

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"rises": 3, "min_rise": 0.02}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    evals, loss = subject.get("eval_loss"), subject.get("loss")
    if evals is None or loss is None or len(evals) < ctx.limit("rises") + 1:
        return
    values = evals.values
    best = min(range(len(values)), key=lambda i: values[i] if values[i] == values[i] else float("inf"))
    begin = 0
    for i in range(1, len(values) + 1):
        if i < len(values) and values[i] > values[i - 1]:
            continue
        end = i - 1
        rises = end - begin
        if rises >= ctx.limit("rises") and values[end] > values[best] * (1 + ctx.limit("min_rise")):
            train_then = last_finite_at(loss, evals.steps[begin])
            train_now = last_finite_at(loss, evals.steps[end])
            if train_then is not None and train_now is not None and train_now < train_then:
                yield hit(subject, evals, begin, end,
                          f"eval_loss rose {rises} evaluations in a row, {fmt(values[begin])} -> {fmt(values[end])} "
                          f"(best {fmt(values[best])} at step {evals.steps[best]}) while the train loss fell "
                          f"{fmt(train_then)} -> {fmt(train_now)}",
                          f"keep the checkpoint of step {evals.steps[best]} (load_best_model_at_end), train fewer "
                          "epochs or lower the LR, add data or regularisation")
        begin = i

