"""Loss scaled by accumulation: the logged train loss is about gradient_accumulation_steps × the eval loss.

What it finds
    Runs whose train loss divided by the eval loss at the same step is, at most eval points (at least 2),
    within 20 % of ``gradient_accumulation_steps`` (from ``--config``), or without a config within 10 % of
    a power of two from 2 up (the common accumulation values).

Why it matters for training
    transformers 4.46.x-4.47.0 logged the train loss multiplied by the accumulation steps for every model
    (transformers#35204, fixed by PR#35207). After that the Trainer divides by the accumulation steps only
    when the model does not take loss kwargs; a model whose ``forward`` takes ``**kwargs`` but drops
    ``num_items_in_batch`` is trusted to normalise and does not, so its loss (and gradient) grows with
    ``gradient_accumulation_steps``: transformers#37766 (4.47.1; "no longer increases" by 4.51.3),
    LLaMA-Factory#7743 (Gemma 3 pretraining on 4.50), Liger-Kernel#802 (its patched losses),
    transformers#47688 (heads that declare ``**kwargs``, open on 5.15). The curves, early stopping on
    train loss and comparisons with other runs are off by that factor, and people "fix" a healthy run.

Example
    ``train loss / eval loss is about 8.0 at 5 of 5 evaluations (8.9 vs 1.11 at step 400); gradient
    accumulation is 8``.

Fix
    Upgrade transformers (>= 4.47.1) or divide the logged train loss by ``gradient_accumulation_steps``;
    compare runs on the eval loss.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import accumulation_pattern, fmt, hit, train_eval_pairs

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"tolerance_with_config": 0.2, "tolerance_without": 0.1, "min_evals": 2, "share": 0.5}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    pairs = train_eval_pairs(subject)
    accumulation = ctx.config_value("gradient_accumulation_steps")
    known = isinstance(accumulation, int) and accumulation >= 2
    found = accumulation_pattern(pairs, accumulation,
                                 ctx.limit("tolerance_with_config" if known else "tolerance_without"),
                                 ctx.limit("share"), ctx.limit("min_evals"))
    if found is None:
        return
    factor, near = found
    i, train, value = pairs[near[0]]
    evals = subject.get("eval_loss")
    assert evals is not None  # the pairs are read from it
    source = (f"gradient accumulation is {factor} ({ctx.config_key('gradient_accumulation_steps')})"
              if known else f"is gradient_accumulation_steps {factor}? (pass --config to confirm)")
    yield hit(subject, evals, i, pairs[near[-1]][0],
              f"train loss / eval loss is about {factor} at {len(near)} of {len(pairs)} evaluations "
              f"({fmt(train)} vs {fmt(value)} at step {evals.steps[i]}); {source}",
              "transformers 4.46.0-4.47.0 logged the train loss × accumulation for every model (#35204): upgrade; "
              "on later versions a model (or Liger kernel) that takes **kwargs but drops num_items_in_batch does the "
              "same (#37766): check its forward, compare runs on eval_loss")
