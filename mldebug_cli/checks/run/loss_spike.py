"""Loss spike: the train loss jumps far above its recent window.

What it finds
    Logged train losses above mean + 6σ of the previous 128 logged values (OLMo-core's
    StabilityMonitorCallback and SkipStepOptimizer rule; here once 16 values are in the window) that are
    also at least 2× the window mean (llm-foundry KillLossSpike's factor; axolotl's guide: a spike "suddenly
    jumps 2-10×"). Spikes within 3 logged points are one finding; the message gives the step, the size
    against the window mean and whether the loss came back within 10 logged points. GRPO/RLOO runs are
    skipped (their loss hovers around 0).

    The σ rule needs 16 values before it can judge, so a short run, or the first steps of a run with an
    LR far too high, has its own rule: before the window holds 16 values, a loss at least 2× the mean of
    the (up to 10) logged values before it and at least 2× the first logged loss is a spike (Lightning's
    SpikeDetection judges from the second value, over a window of 10; the factor 2 is llm-foundry's, and
    a fine-tuning loss that doubles from where it started is never progress).

Why it matters for training
    A spike that recovers cost some progress; one that does not recover has damaged the weights. PaLM saw
    about 20 of them in its 540B run and restarted ~100 steps earlier, skipping 200-500 batches; OLMo 2
    found that gradient-norm spikes often come first (see RN004).

Example
    ``step 340: loss 7.9 is 3.4× its window mean 2.3 (window σ 0.09); it did not recover``.

Fix
    Lower the learning rate or lengthen warmup, keep gradient clipping on, and look at the batches logged
    at the spike (repeated n-grams, corrupted rows). Restart from a checkpoint before a spike that did not
    recover and skip the batches around it.
"""

from __future__ import annotations

import math
from itertools import islice
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import cluster, fmt, hit, is_rl, mean, spikes

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"window": 128, "min_window": 16, "sigma": 6.0, "ratio": 2.0, "recovery_points": 10, "max_reported": 10,
              "early_window": 10}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    loss = subject.get("loss")
    if loss is None or is_rl(subject):
        return
    found = spikes(loss, int(ctx.limit("window")), int(ctx.limit("min_window")), ctx.limit("sigma"),
                   ctx.limit("ratio"))
    groups = cluster(sorted(_early(loss, ctx) + found))
    for group in groups[:int(ctx.limit("max_reported"))]:
        index, value, window_mean = max(group, key=lambda p: p[1])
        end = group[-1][0]
        after = loss.values[end + 1:end + 1 + int(ctx.limit("recovery_points"))]
        recovered = bool(after) and mean(after) < 1.5 * window_mean
        verdict = "it recovered" if recovered else ("the log ends there" if not after else "it did not recover")
        yield hit(subject, loss, group[0][0], end,
                  f"loss {fmt(value)} at step {loss.steps[index]} is {value / window_mean:.1f}× its window mean "
                  f"{fmt(window_mean)}; {verdict}",
                  f"lower {ctx.config_key('learning_rate')} or lengthen {ctx.config_key('warmup_steps')}, keep "
                  "max_grad_norm, inspect the batches at that step; restart from an earlier checkpoint if it did not "
                  "recover")
    if len(groups) > ctx.limit("max_reported"):
        rest = groups[int(ctx.limit("max_reported")):]
        yield hit(subject, loss, rest[0][0][0], rest[-1][-1][0],
                  f"{len(rest)} more loss spikes after these", "see the spikes above")


def _early(loss, ctx) -> list[tuple[int, float, float]]:
    """(index, value, mean before) of spikes in the first ``min_window`` finite values: ≥ ratio × the mean of the
    values before it (up to ``early_window``) and ≥ ratio × the first value."""
    finite = list(islice((i for i in range(len(loss)) if math.isfinite(loss.values[i])), int(ctx.limit("min_window"))))
    if len(finite) < 2 or loss.values[finite[0]] <= 0:
        return []
    first, ratio = loss.values[finite[0]], ctx.limit("ratio")
    found = []
    for k in range(1, len(finite)):
        before = [loss.values[i] for i in finite[max(0, k - int(ctx.limit("early_window"))):k]]
        window_mean = mean(before)
        value = loss.values[finite[k]]
        if window_mean > 0 and value >= ratio * window_mean and value >= ratio * first:
            found.append((finite[k], value, window_mean))
    return found
