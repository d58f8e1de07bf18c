"""Loss above uniform: the loss is above ln(vocabulary size), worse than guessing uniformly.

What it finds
    Finite train (and eval) losses above 1.1 × ln(V), where V comes from ``--vocab-size``, ``--tokenizer``
    or the config. A randomly initialised model starts at about ln(V); a pretrained one far below it.
    Without a vocabulary size it still fires above ln(2^21) = 14.56: no released tokenizer has 2,097,152
    tokens (the largest, Gemma's, has 262,144: ln = 12.48), so such a loss is above uniform for any real
    vocabulary; the message says the bound was used.

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

from mldebug_cli.checks.run.common import accumulation_pattern, fmt, hit, points_where, train_eval_pairs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"factor": 1.1, "any_vocab_log2": 21}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if ctx.vocab_size and ctx.vocab_size >= 2:
        limit = math.log(ctx.vocab_size) * ctx.limit("factor")
        bound, why = f"{ctx.limit('factor'):g} × ln({ctx.vocab_size})", ""
        hint = "check that the tokenizer matches the model and labels are not shifted twice; lower the LR"
    else:
        power = int(ctx.limit("any_vocab_log2"))
        limit = power * math.log(2)
        bound = f"ln(2^{power})"
        why = ": worse than uniform for any real vocabulary (no vocabulary size given; none has 2^21 tokens)"
        hint = ("check that the tokenizer matches the model and labels are not shifted twice; lower the LR "
                "(--vocab-size or --tokenizer gives the exact bound)")
    factor = _accumulation(subject, ctx)
    for key in ("loss", "eval_loss"):
        series = subject.get(key)
        if series is None:
            continue
        scale = factor if key == "loss" else 1
        above = points_where(series, lambda v, scale=scale: v / scale > limit)
        if above:
            top = max(series.values[i] for i in above)
            scaled = f" (the logged loss ÷ {scale}, the gradient accumulation RN009 reads in it)" if scale > 1 else ""
            yield hit(subject, series, above[0], above[-1],
                      f"{key}{scaled} above {bound} = {fmt(limit)} at {len(above)} of {len(series)} logged points "
                      f"(max {fmt(top / scale)}){why}", hint)


def _accumulation(subject, ctx) -> int:
    """The factor a train loss logged × gradient accumulation carries (RN009's reading), else 1."""
    from mldebug_cli.checks.run.loss_scaled_by_accumulation import THRESHOLDS as RN009

    accumulation = ctx.config_value("gradient_accumulation_steps")
    known = isinstance(accumulation, int) and accumulation >= 2
    found = accumulation_pattern(train_eval_pairs(subject), accumulation,
                                 RN009["tolerance_with_config" if known else "tolerance_without"], RN009["share"],
                                 RN009["min_evals"])
    return found[0] if found else 1
