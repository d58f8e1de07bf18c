"""The LR changes only when eval metrics are reported.

What it finds
    ``reduce_lr_on_plateau`` and ``greedy`` schedulers. The Trainer steps them only after an
    evaluation, with the metric; between evaluations the LR is constant, and how it changes depends
    on the metric values, which no preflight tool can know. The simulation shows the LR before any
    change. An error when ``reduce_lr_on_plateau`` has no ``eval_strategy``: TrainingArguments
    refuses it.

Why it matters for training
    Without evaluation (``eval_strategy: no``) or with rare evaluation the LR never changes, and
    the warmup you may have set is not applied (see LR004).

Example
    ``lr_scheduler_type: reduce_lr_on_plateau`` with ``eval_strategy: epoch`` on a 1-epoch run: the
    LR stays at ``learning_rate`` for the whole run.

Fix
    Make sure evaluation runs often enough for the scheduler to react, or pick a fixed schedule.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit, Severity
from mldebug_cli.schedule.model import Simulation

SEVERITY = "info"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec = subject.spec
    if not spec.scheduler.metric_driven:
        return
    if spec.scheduler.name == "reduce_lr_on_plateau" and spec.eval_strategy == "no":
        yield Hit(
            message=(
                "lr_scheduler_type reduce_lr_on_plateau requires an eval strategy: TrainingArguments raises "
                "before training starts (eval_strategy is 'no')"
            ),
            hint="set eval_strategy: steps or epoch, with an eval dataset",
            location=at_key(subject, spec.key("eval_strategy") or spec.key("scheduler"), "eval_strategy"),
            severity=Severity.ERROR,
        )
        return
    yield Hit(
        message=(
            f"the {spec.scheduler.name} scheduler changes the LR only from eval metrics: the plot shows the LR "
            "before any change, and it stays there if evaluation never runs"
        ),
        location=at_key(subject, spec.key("scheduler"), "lr_scheduler_type"),
    )
