"""Warmup share of training outside the usual range.

What it finds
    The warmup share W / T of the optimizer steps: a warning above 20%, info when outside 1-10%
    (including no warmup at all). Skipped when warmup is longer than training (LR001) or the
    scheduler takes no warmup; no warmup with a large effective batch is LR017's warning instead.

Why it matters for training
    Long warmup spends a large part of a short fine-tuning run below the intended LR; no or very
    short warmup lets the first, noisy Adam updates hit the model at full LR, which can spike the
    loss of a pretrained model. A step count sized for one dataset becomes a very different share
    when the dataset, batch size or epochs change.

Example
    ``warmup_steps: 100`` on a run of T = 300 optimizer steps: 33% of training is warmup.

Fix
    Give warmup as a share of the steps, typically 1-10%, in your framework's key: ``warmup_ratio: 0.03``
    in axolotl and LLaMA-Factory, ``warmup_steps: 0.03`` in transformers >= 5 and TRL (the hint names yours).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key, no_warmup_large_batch, warmup_share_hint
from mldebug_cli.core.findings import Hit, Severity
from mldebug_cli.core.numbers import percent, plural
from mldebug_cli.schedule.model import Simulation

SEVERITY = "warning"
SUBJECT = "schedule"
WARN_ABOVE, USUAL_RANGE = 0.20, (0.01, 0.10)


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    plan, spec = subject.plan, subject.spec
    if not subject.schedule or spec.scheduler.ignores_warmup or plan.warmup_steps >= plan.total_steps:
        return
    share = plan.warmup_steps / plan.total_steps
    if USUAL_RANGE[0] <= share <= USUAL_RANGE[1] or no_warmup_large_batch.applies(subject):
        return
    where = at_key(subject, spec.key("warmup"), "warmup_steps")
    if share > WARN_ABOVE:
        severity, what = Severity.WARNING, "more than 20% of training"
    elif plan.warmup_steps == 0:
        severity, what = Severity.INFO, "no warmup: the first steps run at the full learning rate"
    else:
        severity, what = Severity.INFO, "outside the usual 1-10%"
    yield Hit(
        message=f"warmup is {plan.warmup_steps} of {plural(plan.total_steps, 'optimizer step')} ({percent(share)}): {what}",
        hint=f"give warmup as a share of the steps, e.g. {warmup_share_hint(subject, 0.03)}",
        location=where,
        severity=severity,
    )
