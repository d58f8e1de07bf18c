"""The run evaluates on nothing: no eval set and no eval strategy.

What it finds
    An SFT or preference config that gives the trainer no eval set: TRL and transformers configs whose
    ``eval_strategy`` is ``no`` (TrainingArguments' default), LLaMA-Factory configs without ``val_size`` or
    ``eval_dataset`` (or with ``eval_strategy: no``), axolotl configs with ``val_set_size: 0`` (its default) and no
    ``test_datasets``. GRPO and other online RL runs are not checked: they score their own completions.

Why it matters for training
    Without an eval loss, overfitting (train loss falling, eval loss rising: RN006) and a train/eval leak (RN010)
    cannot be seen during or after the run. axolotl's training-stability guide
    (https://docs.axolotl.ai/docs/training_stability.html, "SFT Stability > Overfitting") starts with "Increase
    val_set_size (e.g., 0.05) and monitor eval/loss".

Example
    An axolotl config without ``val_set_size``: the run logs only the train loss.

Fix
    Hold out a share of the rows (``val_set_size: 0.05`` in axolotl, ``val_size: 0.05`` with
    ``eval_strategy: steps`` in LLaMA-Factory) or give an eval dataset with ``eval_strategy: steps``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.config import at_setting
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.schema import ConfigReview

SEVERITY = "info"
SUBJECT = "config"
_ONLINE = ("grpo", "ppo")


def run(review: ConfigReview, ctx: None) -> Iterator[Hit]:
    facts = review.facts
    if facts is None or facts.task in _ONLINE or facts.stability.eval_split is not None:
        return
    yield Hit(
        message=f"the {facts.task.upper()} run has no eval set: overfitting and a train/eval overlap will not show "
                "in its logs",
        hint=f"hold out rows for evaluation: {facts.stability.eval_split_fix}",
        location=at_setting(review, "eval_split", facts.stability.eval_split_key),
    )
