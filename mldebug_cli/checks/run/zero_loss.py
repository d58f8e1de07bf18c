"""Zero loss: the training loss is exactly 0 from the start or over a stretch.

What it finds
    Logged train losses of exactly 0.0, either from the first logged step or in a stretch that jumps there
    from a real loss, or where the gradient norm is NaN/Inf at the same steps. A loss that glides down to
    0.0 under transformers 4.x's 4-decimal rounding is not reported. GRPO/RLOO runs are skipped: their
    loss is about 0 by design (trl#3452); so is a preference loss that saturates at 0 after real
    values (RN030), unless its gradient norm is NaN.

Why it matters for training
    A cross-entropy of 0 means nothing was trained on: every label is -100 (the masking or the template
    markers are wrong), or the steps produced NaN/Inf and HF Trainer's ``logging_nan_inf_filter`` (on by
    default) replaced a window made only of NaN steps by 0.0 (trainer.py: the window accumulator starts
    at 0 after every log). Unsloth refuses such data up front ("All labels in your dataset are -100").

Example
    ``steps 1-60: loss is exactly 0.0 at all 60 logged points (grad_norm 0 there)``: the dataset's
    assistant marker never matched, so every label was masked.

Fix
    From the start: run ``mldebug inspect-data`` on the dataset (DS001 no-trainable-tokens) and check the
    masking keys. With NaN gradient norms: treat it as RN002 (use bf16, lower the LR, find the bad batch).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, runs_where
from mldebug_cli.sources.runlog.model import PREFERENCE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"min_points": 2, "jump_from": 0.05}  # a stretch needs 2 points, or a jump from above 0.05


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss = subject.get("loss")
    if loss is None or is_rl(subject):
        return
    grad = subject.get("grad_norm")
    for first, last in runs_where(loss, lambda v: v == 0.0):
        count = last - first + 1
        nan_grads = _non_finite_grads(grad, loss, first, last)
        from_start = first == 0
        jump = first > 0 and math.isfinite(loss.values[first - 1]) and loss.values[first - 1] > ctx.limit("jump_from")
        stretch = jump and count >= ctx.limit("min_points") and subject.kind != PREFERENCE
        if not (from_start or nan_grads or stretch):
            continue
        if nan_grads:
            cause = (f"grad_norm is NaN/Inf at {nan_grads} of these steps: the steps were non-finite and the "
                     "Trainer's NaN filter logged 0.0")
            hint = "a NaN signature, not convergence: use bf16 instead of fp16, lower the LR, look for the bad batch"
        elif from_start:
            cause = "from the first logged step: no label was trained on (all -100)"
            hint = ("run `mldebug inspect-data` on the dataset (DS001): the template's assistant markers or the "
                    "masking keys (train_on_inputs, roles_to_train, assistant_only_loss) mask every token")
        else:
            cause = f"it jumped there from {fmt(loss.values[first - 1])}: the rows of this stretch have no trainable labels"
            hint = "check the data of these steps for rows whose labels are all -100 (mldebug inspect-data)"
        yield hit(subject, loss, first, last,
                  f"the train loss is exactly 0.0 at {count} logged point{'s' if count != 1 else ''}; {cause}", hint)


def _non_finite_grads(grad, loss, first: int, last: int) -> int:
    if grad is None:
        return 0
    steps = set(loss.steps[first:last + 1])
    return sum(1 for s, v in zip(grad.steps, grad.values) if s in steps and not math.isfinite(v))
