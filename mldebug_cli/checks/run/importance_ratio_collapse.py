"""Importance-ratio collapse: the sampler's tokens are stale (off-policy) for the trained policy.

What it finds
    GRPO runs with vLLM importance-sampling correction whose ``sampling/importance_sampling_ratio/min`` falls
    below 0.1, or whose ``sampling/sampling_logp_difference/mean`` exceeds 1 (axolotl's guide: ratio min
    above 0.1 healthy, near 0 stale; logp difference below 0.1 healthy, above 1 diverged from the vLLM
    weights).

Why it matters for training
    The completions were sampled by weights that differ from the policy being trained: the vLLM server is
    not receiving weight updates (sync failing, ``vllm_mode`` misconfigured), or generation runs many
    steps ahead. The correction then down-weights most tokens and learning stalls or goes wrong.

Example
    ``steps 20-200: sampling/importance_sampling_ratio/min below 0.1 at 30 logged points (min 0.004)``.

Fix
    Check that weights are synced to vLLM every step (server logs), lower ``steps_per_generation``, and keep
    vLLM's dtype the same as training.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, points_where, share

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_ratio": 0.1, "max_logp_difference": 1.0}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not is_rl(subject):
        return
    ratio = subject.get("sampling/importance_sampling_ratio/min")
    if ratio is not None:
        low = points_where(ratio, lambda v: v < ctx.limit("min_ratio"))
        if low:
            yield hit(subject, ratio, low[0], low[-1],
                      f"{ratio.key} below {ctx.limit('min_ratio'):g} {share(low, ratio)} "
                      f"(min {fmt(min(ratio.values[i] for i in low))})",
                      "check the vLLM weight sync and lower steps_per_generation")
    diff = subject.get("sampling/sampling_logp_difference/mean")
    if diff is not None:
        high = points_where(diff, lambda v: v > ctx.limit("max_logp_difference"))
        if high:
            yield hit(subject, diff, high[0], high[-1],
                      f"{diff.key} above {ctx.limit('max_logp_difference'):g} at {len(high)} of {len(diff)} logged "
                      f"points (max {fmt(max(diff.values[i] for i in high))})",
                      "the sampler's weights differ from the policy: check the vLLM weight sync and dtype")
