"""Non-finite values: NaN or Inf in the loss, the gradient norm or the eval loss.

What it finds
    Logged NaN/Inf values of ``loss``, ``grad_norm`` and ``eval_loss`` (and ``reward`` in RL runs). The
    message says which series went non-finite first (grad norm first: the backward pass; loss first while
    the grad norm was still finite: the forward pass; axolotl's training-stability guide) and whether the
    learning rate held still at those steps. A few non-finite grad norms among many finite ones with a
    finite loss are the fp16 loss scaler skipping steps: reported as info.

Why it matters for training
    One NaN poisons the weights: every later step is NaN or, behind HF Trainer's NaN filter, a misleading
    0.0 loss. Megatron checks for NaN in the loss on every step by default for this reason; Lightning's
    EarlyStopping and Composer's NaNMonitor stop on the first one.

Example
    ``steps 120-200: grad_norm is NaN at 9 logged points (first at step 120, loss still finite there):
    the backward pass overflowed first``.

Fix
    Switch fp16 to bf16, lower the learning rate or raise warmup, clip gradients (``max_grad_norm``),
    and look for a bad batch at the first step. Rare fp16 overflow steps need no action.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import after, hit, share
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"rare_share": 0.05}  # non-finite grad norms on at most 5 % of points with a finite loss: fp16 skips
KEYS = ("grad_norm", "loss", "eval_loss", "reward")


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    firsts = {}
    for key in KEYS:
        series = subject.get(key)
        if series is None:
            continue
        bad = [i for i, v in enumerate(series.values) if not math.isfinite(v)]
        if bad:
            firsts[key] = (series, bad)
    if not firsts:
        return
    order = sorted(firsts, key=lambda k: firsts[k][0].steps[firsts[k][1][0]])
    first_key = order[0]
    loss_bad = "loss" in firsts
    for key in order:
        series, bad = firsts[key]
        portion = len(bad) / len(series)
        kinds = sorted({"NaN" if math.isnan(series.values[i]) else "Inf" for i in bad})
        rare_scaler = key == "grad_norm" and not loss_bad and portion <= ctx.limit("rare_share")
        message = (f"{key} is {'/'.join(kinds)} {share(bad, series)} "
                   f"(first at step {series.steps[bad[0]]})")
        if key == first_key and len(order) > 1:
            message += f"; {key} went non-finite first: " + ("the backward pass" if key == "grad_norm" else "the forward pass")
        message += _lr_note(subject, series, bad)
        if rare_scaler:
            hint = "rare overflow steps are the fp16 loss scaler at work (the step is skipped); no action needed"
        elif key == "grad_norm":
            hint = "use bf16 instead of fp16, lower the LR or lengthen warmup, keep max_grad_norm (1.0), find the batch"
        else:
            hint = "look at the batch at the first step (empty or huge sequences), lower the LR, use bf16; restart " \
                   "from a checkpoint before the first NaN"
        yield hit(subject, series, bad[0], bad[-1], message, hint, Severity.INFO if rare_scaler else None)


def _lr_note(run, series, bad) -> str:
    lr = run.get("learning_rate")
    if lr is None:
        return ""
    held = 0
    for i in bad:
        step = series.steps[i]
        j = after(lr, step)
        if 0 < j < len(lr) and lr.steps[j] == step and lr.values[j] == lr.values[j - 1]:
            held += 1
    return f"; the LR held still at {held} of them (skipped optimizer steps)" if held else ""
