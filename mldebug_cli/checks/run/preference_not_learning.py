"""Preference not learning: a DPO loss stays at ln 2 (0.693); the message says why (LR phase, empty labels).

What it finds
    DPO runs (not ORPO, whose loss adds an SFT term) whose logged loss sits at ln 2 = 0.6931: 80 % of the
    points within 0.02 of it, or, for a noisy per-step log, each quarter's mean within 3 standard errors
    of it (at most 0.06). Three readings, checked in this order:

    - ``logps/chosen`` and ``logps/rejected`` exactly 0.0 at most of those points: the completions have no
      trainable token (TRL's logps are sums over completion tokens; 0 means none was counted): empty labels,
      not a learning-rate problem (error);
    - at least 5 points after warmup: the policy has not moved from the reference (warning);
    - every logged point still inside warmup (the logged LR rises to the last point): not learning *yet*,
      because the LR is still a fraction of its peak: the run stopped early or warmup is a large share of
      it (info; the message gives the LR reached and, with ``--config``, the warmup and the peak).

Why it matters for training
    DPO's loss is -log σ(β·(policy - reference log-ratio margin)); at ln 2 the margin is 0: the policy
    equals the reference (TRL logs exactly 0.6931 at step 0). Staying there after warmup means no update
    reaches the policy: an LR of 0 or far too small, frozen or missing adapters, a reference that is the
    policy itself (peft adapters disabled for both), or a ``beta`` so small the logits never move. Inside
    warmup it is expected: with linear warmup the LR at 4 % of a 20 % warmup is a fiftieth of the peak.

Example
    ``steps 1-202: loss at ln 2 (mean 0.6902, each quarter within 0.06) while the LR is still in warmup
    (1.98e-07 at step 202, still rising; 4% of 5100 planned steps): not learning yet``.

Fix
    Empty labels: check the collator's and the config's ``max_length`` against the prompt lengths and the
    completion masks (``mldebug inspect-data``). After warmup: check the learning rate and that adapters are
    trainable; raise beta or the LR. In warmup: let it run past warmup, or shorten ``warmup_steps``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import after, fmt, hit, mean, warmup_end_step
from mldebug_cli.core.findings import Severity

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"tolerance": 0.02, "share": 0.8, "min_points": 5, "quarter_sigmas": 3.0, "quarter_max": 0.06,
              "zero_logps_share": 0.8}
LN2 = math.log(2)


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss = subject.get("loss")
    if loss is None or subject.preference_loss != "dpo":
        return
    every = [i for i in range(len(loss)) if math.isfinite(loss.values[i])]
    if len(every) < ctx.limit("min_points") or not _at_ln2([loss.values[i] for i in every], ctx):
        yield from _after_warmup(subject, loss, ctx)
        return
    empty = _zero_logps(subject, loss, every)
    values = [loss.values[i] for i in every]
    if empty >= ctx.limit("zero_logps_share") * len(every):
        yield hit(subject, loss, every[0], every[-1],
                  f"loss at ln 2 (mean {fmt(mean(values))}) with logps/chosen and logps/rejected exactly 0.0 at "
                  f"{empty} of {len(every)} logged points: the completions have no trainable token (empty labels), "
                  "not a learning-rate problem",
                  f"check that {ctx.config_key('max_length')} (and the collator's) leaves room after the prompt and "
                  "that the completion masks are not empty (`mldebug inspect-data` on the pairs)",
                  severity=Severity.ERROR)
        return
    phase = _still_warming(subject, loss, ctx)
    if phase is not None:
        yield hit(subject, loss, every[0], every[-1],
                  f"loss at ln 2 (mean {fmt(mean(values))}) over all {len(values)} logged points while the LR is "
                  f"still in warmup ({phase}): not learning yet, the LR is a fraction of its peak",
                  f"let the run go past warmup, or shorten {ctx.config_key('warmup_steps')} "
                  f"({ctx.config_key('warmup_ratio')}) if warmup is a large share of the run",
                  severity=Severity.INFO)
        return
    yield from _after_warmup(subject, loss, ctx)


def _after_warmup(subject, loss, ctx):
    start = after(loss, warmup_end_step(subject) + 1)
    points = [i for i in range(start, len(loss)) if math.isfinite(loss.values[i])]
    if len(points) < ctx.limit("min_points"):
        return
    values = [loss.values[i] for i in points]
    if _at_ln2(values, ctx):
        near = sum(1 for v in values if abs(v - LN2) <= ctx.limit("tolerance"))
        yield hit(subject, loss, points[0], points[-1],
                  f"loss at ln 2 after warmup (within {ctx.limit('tolerance'):g} at {near} of {len(values)} logged "
                  f"points, mean {fmt(mean(values))}): the policy has not moved from the reference",
                  f"check {ctx.config_key('learning_rate')} and that adapters are trainable; raise beta or the LR")


def _at_ln2(values: list[float], ctx) -> bool:
    """Most points within the tolerance of ln 2, or (noisy per-step logs) every quarter's mean near it."""
    if not values:
        return False
    near = sum(1 for v in values if abs(v - LN2) <= ctx.limit("tolerance"))
    if near >= ctx.limit("share") * len(values):
        return True
    if len(values) < 4 * ctx.limit("min_points"):
        return False
    size = len(values) // 4
    quarters = [values[k * size:(k + 1) * size] for k in range(3)] + [values[3 * size:]]
    spread = math.sqrt(mean((v - mean(values)) ** 2 for v in values))
    for quarter in quarters:
        allowed = min(ctx.limit("quarter_max"),
                      max(ctx.limit("tolerance"), ctx.limit("quarter_sigmas") * spread / math.sqrt(len(quarter))))
        if abs(mean(quarter) - LN2) > allowed:
            return False
    return True


def _zero_logps(subject, loss, every: list[int]) -> int:
    chosen, rejected = subject.get("logps/chosen"), subject.get("logps/rejected")
    if chosen is None or rejected is None:
        return 0
    return sum(1 for i in every if chosen.value_at(loss.steps[i]) == 0.0 and rejected.value_at(loss.steps[i]) == 0.0)


def _still_warming(subject, loss, ctx) -> str | None:
    """How far warmup got when the logged LR rises to the last logged point, else None."""
    lr = subject.get("learning_rate")
    if lr is None:
        return None
    finite = [(s, v) for s, v in zip(lr.steps, lr.values) if math.isfinite(v)]
    if len(finite) < 2 or finite[-1][1] <= finite[0][1] or any(b < a for (_s, a), (_t, b) in zip(finite, finite[1:])):
        return None
    step, value = finite[-1]
    peak = ctx.config_value("learning_rate")
    if isinstance(peak, (int, float)) and peak > 0 and value >= 0.99 * peak:
        return None
    parts = [f"{fmt(value)} at step {step}, still rising"]
    if isinstance(peak, (int, float)) and peak > 0:
        parts.append(f"{value / peak:.0%} of {ctx.config_key('learning_rate')} {fmt(peak)}")
    planned = subject.meta.get("max_steps")
    if isinstance(planned, (int, float)) and planned > step:
        parts.append(f"the log ends at {step / planned:.0%} of {int(planned)} planned steps")
    return "; ".join(parts)
