"""max_steps ends the run before (or after) the requested epochs.

What it finds
    A step limit that disagrees with the epoch count: ``max_steps`` in TrainingArguments/SFTConfig
    or LLaMA-Factory; axolotl, which always passes its own ``ceil(rows x epochs / global batch)``
    (``floor`` with sample packing) as ``max_steps`` (it differs from the Trainer's per-epoch count when batches don't divide
    evenly); torchtune's ``max_steps_per_epoch``, which cuts every epoch short. The message gives
    the epochs actually run.

Why it matters for training
    The schedule decays over T = max_steps, so the run stops mid-epoch (some rows never seen in
    the last epoch) or wraps into an extra partial epoch, while you reason in epochs.

Example
    ``num_train_epochs: 3``, ``max_steps: 100`` with 50 optimizer steps per epoch: the run ends
    after 2 epochs.

Fix
    Set only one of them (``max_steps: -1`` to train by epochs), or set ``max_steps`` to a whole
    number of epochs (``mldebug lr-plot`` prints the steps per epoch).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import epochs, noun, plural
from mldebug_cli.schedule.model import EPOCH_LOOP_STEPS, PRECOMPUTED_STEPS, Simulation

SEVERITY = "warning"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec, plan = subject.spec, subject.plan
    per_epoch, run_epochs = plan.optimizer_steps_per_epoch, plan.epochs_run
    if not per_epoch or run_epochs is None or not plan.steps_run:
        return
    if spec.counting.kind == EPOCH_LOOP_STEPS:
        yield from _torchtune(subject)
        return
    by_epochs = math.ceil(spec.num_epochs * per_epoch)
    if plan.total_steps == by_epochs:
        return
    ends = "before" if plan.total_steps < by_epochs else "after"
    ends = f"the run stops {ends} the requested {_epochs(spec.num_epochs)}, after {_epochs(run_epochs)}"
    total_steps = spec.counting.total_steps
    if spec.counting.kind == PRECOMPUTED_STEPS and spec.max_steps <= 0 and total_steps and plan.train_rows is not None:
        rounding = "floor" if spec.packing.enabled else "ceil"  # packed: rounded down, as axolotl does
        message = (
            f"axolotl passes its own step count as max_steps: {rounding}({plural(plan.train_rows, 'row')} x "
            f"{_epochs(spec.num_epochs)} / global batch {spec.batch_size * spec.grad_accum * spec.world_size}) = "
            f"{total_steps(spec, plan.train_rows)}, while {_epochs(spec.num_epochs)} of "
            f"{plural(per_epoch, 'step')} are {by_epochs}: {ends}"
        )
        where = at_key(subject, spec.key("epochs"), "num_epochs")
    else:
        message = (
            f"max_steps = {spec.max_steps} overrides num_train_epochs = {epochs(spec.num_epochs)} ({by_epochs} steps of "
            f"{per_epoch} per epoch): {ends}"
        )
        where = at_key(subject, spec.key("max_steps"), "max_steps")
    yield Hit(message=message, hint="set only one of max_steps and the epoch count", location=where)


def _torchtune(subject: Simulation) -> Iterator[Hit]:
    spec, plan = subject.spec, subject.plan
    if not plan.micro_batches_per_epoch or plan.epochs_run is None:
        return
    full = plan.micro_batches_per_epoch // spec.grad_accum
    if spec.max_steps_per_epoch is None or spec.max_steps_per_epoch >= full:
        return
    seen = spec.max_steps_per_epoch * spec.grad_accum / plan.micro_batches_per_epoch
    yield Hit(
        message=(
            f"max_steps_per_epoch = {spec.max_steps_per_epoch} cuts every epoch to {spec.max_steps_per_epoch} of {full} "
            f"optimizer steps: each of the {int(spec.num_epochs)} epochs sees {seen:.0%} of the data "
            f"({_epochs(plan.epochs_run)} of data in all)"
        ),
        hint="remove max_steps_per_epoch to train on every batch",
        location=at_key(subject, spec.key("max_steps"), "max_steps_per_epoch"),
    )


def _epochs(value: float) -> str:
    return f"{epochs(value)} {noun(value, 'epoch')}"
