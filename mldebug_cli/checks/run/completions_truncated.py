"""Completions truncated: most RL completions hit ``max_completion_length``.

What it finds
    GRPO/RLOO runs where ``completions/clipped_ratio`` is above 0.8 on more than half of the logged points
    (axolotl's guide: below 0.3 healthy, above 0.8 raise the max length), or, with ``--config`` giving
    ``max_completion_length``, the mean completion length is at 98 % of it on most points (no completion
    ends with EOS: older TRL logs no clipped ratio). Without a clipped ratio or a config the limit is
    inferred from the lengths themselves: on nearly every logged point (80 %) the mean length equals the
    longest completion of the batch (``completions/max_length``, which stays the same value), or, when only
    the mean is logged (TRL <= 0.16's ``completion_length``), the mean is exactly the same number: sampled
    lengths average to one exact value step after step only when a cap cuts every completion.

Why it matters for training
    A clipped completion never reaches its answer, so its reward is usually 0 (RN020) and the model is
    not learning to stop. TRL's own logging guide: a high clipped ratio means the model is not learning
    to stop or the limit is too short.

Example
    ``steps 1-50: completions/clipped_ratio above 0.8 at 50 of 50 logged points (mean 1.0)``.

Fix
    Raise ``max_completion_length``, add a format/length reward, or start from a model fine-tuned to give
    short answers; check that the EOS token ends the chat template's assistant turn.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_clipped": 0.8, "share": 0.5, "at_limit": 0.98, "inferred_share": 0.8}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not is_rl(subject):
        return
    clipped = subject.get("completions/clipped_ratio")
    if clipped is not None:
        high = [i for i, v in enumerate(clipped.values) if v > ctx.limit("max_clipped")]
        if high and len(high) > ctx.limit("share") * len(clipped):
            yield hit(subject, clipped, high[0], high[-1],
                      f"completions/clipped_ratio above {ctx.limit('max_clipped'):g} at {len(high)} of "
                      f"{len(clipped)} logged points (mean {fmt(mean(clipped.values[i] for i in high))})",
                      f"raise {ctx.config_key('max_completion_length')} or reward shorter answers; check the EOS "
                      "token ends the assistant turn")
            return
    limit = ctx.config_value("max_completion_length")
    length = subject.get("completions/mean_length")
    if isinstance(limit, int) and limit > 0 and length is not None:
        full = [i for i, v in enumerate(length.values) if v >= ctx.limit("at_limit") * limit]
        if full and len(full) > ctx.limit("share") * len(length):
            yield hit(subject, length, full[0], full[-1],
                      f"mean completion length is at max_completion_length {limit} at {len(full)} of {len(length)} "
                      "logged points: no completion ends with EOS",
                      f"raise {ctx.config_key('max_completion_length')} or reward shorter answers")
        return
    if clipped is None and length is not None:
        yield from _inferred_limit(subject, length, ctx)


def _inferred_limit(subject, length, ctx):
    """Every completion at one length, step after step: the limit, read from the lengths."""
    longest = subject.get("completions/max_length")
    values = length.values
    if longest is not None and len(longest) == len(length):
        caps = Counter(v for v in longest.values if math.isfinite(v) and v > 0)
        if not caps:
            return
        cap, _count = caps.most_common(1)[0]
        full = [i for i in range(len(values)) if longest.values[i] == cap and values[i] >= ctx.limit("at_limit") * cap]
        evidence = f"equals the longest completion {fmt(cap)} (the same at every such step)"
    else:
        counts = Counter(v for v in values if math.isfinite(v) and v > 0)
        if not counts:
            return
        cap, _count = counts.most_common(1)[0]
        full = [i for i in range(len(values)) if values[i] == cap]
        evidence = f"is exactly {fmt(cap)}"
    if len(full) < 2 or len(full) < ctx.limit("inferred_share") * len(length):
        return
    idle = [k for k in ("reward", "reward_std", "loss", "grad_norm")
            if (series := subject.get(k)) is not None and all(v == 0 for v in series.values)]
    tail = f"; {', '.join(idle)} {'is' if len(idle) == 1 else 'are'} 0 throughout" if idle else ""
    yield hit(subject, length, full[0], full[-1],
              f"the mean completion length {evidence} at {len(full)} of {len(length)} logged points: every completion "
              f"stops at a limit of {fmt(cap)} tokens (max_completion_length; no clipped_ratio is logged){tail}",
              f"raise {ctx.config_key('max_completion_length')} above {fmt(cap)} or reward shorter answers; check "
              "the EOS token ends the assistant turn")
