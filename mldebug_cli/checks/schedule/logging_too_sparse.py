"""logging_steps is at least the number of optimizer steps: no LR is logged.

What it finds
    Step-based logging whose interval (``logging_steps``, a ratio below 1 resolved against T, or
    torchtune's ``log_every_n_steps``) is at least the total optimizer steps T.

Why it matters for training
    With an interval above T nothing is logged during training (no loss, no learning_rate); with
    exactly T only the last step is. There is then nothing to compare the real LR curve with (and
    ``--trainer-state`` has nothing to overlay). transformers' default of 500 is larger than most
    fine-tuning runs.

Example
    TrainingArguments defaults (``logging_steps: 500``) on a 120-step run.

Fix
    Set ``logging_steps`` to a few percent of T, or a ratio such as ``logging_steps: 0.01``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import plural
from mldebug_cli.schedule.model import PRECOMPUTED_STEPS, Simulation

SEVERITY = "warning"
SUBJECT = "schedule"


def logging_interval(subject: Simulation) -> int | None:
    spec, plan = subject.spec, subject.plan
    if spec.logging_strategy != "steps":
        return None
    steps = spec.logging_steps
    counting = spec.counting
    if (steps is None and counting.kind == PRECOMPUTED_STEPS and counting.logging_steps is not None
            and counting.total_steps is not None):  # its default interval follows its own step count
        rows = plan.train_rows
        steps = counting.logging_steps(counting.total_steps(spec, rows) if rows is not None else plan.total_steps)
    if steps is None:
        return None
    return math.ceil(plan.total_steps * steps) if steps < 1 else int(steps)


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec, plan = subject.spec, subject.plan
    interval = logging_interval(subject)
    if interval is None or not plan.steps_run or interval < plan.total_steps:
        return
    if interval > plan.total_steps:
        what = "no loss or learning_rate is logged"
    else:
        what = f"only step {plan.total_steps} is logged"
    if spec.logging_first_step:
        what += " (besides step 1, from logging_first_step)"
    yield Hit(
        message=f"logging every {interval} steps on a run of {plural(plan.total_steps, 'optimizer step')}: {what}",
        hint=f"set logging_steps to at most {max(1, plan.total_steps // 20)}, or a ratio such as 0.01",
        location=at_key(subject, spec.key("logging_steps"), "logging_steps"),
    )
