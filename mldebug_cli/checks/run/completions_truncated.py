"""Completions truncated: most RL completions hit ``max_completion_length``.

What it finds
    GRPO/RLOO runs where ``completions/clipped_ratio`` is above 0.8 on more than half of the logged points
    (axolotl's guide: below 0.3 healthy, above 0.8 raise the max length), or, with ``--config`` giving
    ``max_completion_length``, the mean completion length is at 98 % of it on most points (no completion
    ends with EOS: older TRL logs no clipped ratio).

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

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl, mean

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"max_clipped": 0.8, "share": 0.5, "at_limit": 0.98}


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
