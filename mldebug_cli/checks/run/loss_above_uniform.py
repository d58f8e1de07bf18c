"""Loss above uniform: the loss is above ln(vocabulary size), worse than guessing uniformly.

What it finds
    Finite train (and eval) losses above 1.1 × ln(V), where V comes from ``--vocab-size``, ``--tokenizer``
    or the config. A randomly initialised model starts at about ln(V); a pretrained one far below it.
    Needs a vocabulary size; without one the check stays silent.

Why it matters for training
    A model scoring worse than a uniform guess is being trained on inputs and labels that do not line
    up (labels shifted twice, the wrong tokenizer for the model, token ids beyond the embedding), or it
    has diverged (LR far too high). Nothing it learns is useful.

Example
    ``steps 20-200: loss above ln(151665) = 11.93 at 10 logged points (max 14.2)``.

Fix
    Check that the tokenizer belongs to the model, that labels are the input ids (the model shifts them),
    and lower the learning rate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, points_where

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"factor": 1.1}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not ctx.vocab_size or ctx.vocab_size < 2:
        return
    limit = math.log(ctx.vocab_size) * ctx.limit("factor")
    for key in ("loss", "eval_loss"):
        series = subject.get(key)
        if series is None:
            continue
        above = points_where(series, lambda v: v > limit)
        if above:
            top = max(series.values[i] for i in above)
            yield hit(subject, series, above[0], above[-1],
                      f"{key} above {ctx.limit('factor'):g} × ln({ctx.vocab_size}) = {fmt(limit)} at {len(above)} of "
                      f"{len(series)} logged points (max {fmt(top)})",
                      "check that the tokenizer matches the model and labels are not shifted twice; lower the LR")
