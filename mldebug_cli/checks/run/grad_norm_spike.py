"""Gradient-norm spike: the gradient norm leaves its healthy range or jumps far above its recent window.

What it finds
    Finite logged ``grad_norm`` values above 100 in SFT/preference runs or above 10 in GRPO/RLOO runs
    (axolotl's training-stability guide: SFT 0.1-10 with spikes above 100 meaning instability, GRPO
    0.001-1 with above 10 unstable; Megatron's large-grad check uses 10), and values above mean + 6σ of
    the previous 128 logged values and 2× their mean (OLMo-core's rule, as RN003). The run's first optimizer
    step (step 1, when it is logged) is left out of the range rule (a cold optimizer's first step is often
    large); a first logged point at a later step counts like any other.

Why it matters for training
    ``grad_norm`` is the pre-clip norm of the last optimizer step before each log. Spikes precede loss
    spikes (OLMo 2) and, under fp16, overflow. A norm that stays far above the range means the LR is too
    high for the model or the loss is summed instead of averaged.

Example
    ``steps 40-60: grad_norm above 100 at 3 logged points (max 1.6e+03 at step 50)``.

Fix
    Lower the learning rate, lengthen warmup, keep ``max_grad_norm`` (1.0); check that the loss is averaged
    over tokens; find the batches at the spikes.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import cluster, fmt, hit, is_rl, share, spikes

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"sft_max": 100.0, "rl_max": 10.0, "window": 128, "min_window": 16, "sigma": 6.0, "ratio": 2.0,
              "max_reported": 5}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    grad = subject.get("grad_norm")
    if grad is None:
        return
    limit = ctx.limit("rl_max") if is_rl(subject) else ctx.limit("sft_max")
    first = 1 if grad.steps[0] <= 1 else 0  # only the optimizer's very first step is excused
    above = [i for i in range(first, len(grad)) if math.isfinite(grad.values[i]) and grad.values[i] > limit]
    if above:
        top = max(above, key=lambda i: grad.values[i])
        yield hit(subject, grad, above[0], above[-1],
                  f"grad_norm above {fmt(limit)} {share(above, grad)} "
                  f"(max {fmt(grad.values[top])} at step {grad.steps[top]})",
                  f"lower {ctx.config_key('learning_rate')} or lengthen {ctx.config_key('warmup_steps')}, keep "
                  "max_grad_norm at 1.0; check the loss is averaged over tokens")
    above_set = set(above)
    found = [p for p in spikes(grad, int(ctx.limit("window")), int(ctx.limit("min_window")), ctx.limit("sigma"),
                               ctx.limit("ratio")) if p[0] not in above_set]
    for group in cluster(found)[:int(ctx.limit("max_reported"))]:
        index, value, window_mean = max(group, key=lambda p: p[1])
        yield hit(subject, grad, group[0][0], group[-1][0],
                  f"grad_norm {fmt(value)} at step {grad.steps[index]} is {value / window_mean:.1f}× its window "
                  f"mean {fmt(window_mean)}",
                  "inspect the batches at that step; if loss spikes follow, lower the LR (see RN003)")
