"""Micro-batches per epoch are not a multiple of gradient accumulation.

What it finds
    Epochs of L micro-batches (per process) where L is not a multiple of
    ``gradient_accumulation_steps``. The HF Trainer then takes a shorter last window each epoch;
    torchtune never steps on the leftover micro-batches, so their gradients are added to the next
    epoch's first step (and lost after the last epoch).

Why it matters for training
    The step arithmetic rounds up (HF) or down (torchtune), so T differs from
    ``rows x epochs / global batch``; the short window's update averages fewer examples; in
    torchtune one step per epoch accumulates more micro-batches than configured.

Example
    1,000 rows, batch 8 (125 micro-batches), accumulation 16: 7 full windows and one of 13.

Fix
    Usually nothing; choose batch x accumulation dividing the per-process row count to make every
    step equal.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import plural
from mldebug_cli.schedule.model import EPOCH_LOOP_STEPS, Simulation

SEVERITY = "info"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec, plan = subject.spec, subject.plan
    leftover, length = plan.leftover_micro_batches, plan.micro_batches_per_epoch
    if not leftover or not length or spec.grad_accum < 2 or not plan.steps_run:
        return
    head = f"{plural(length, 'micro-batch', 'micro-batches')} per epoch is not a multiple of gradient_accumulation_steps {spec.grad_accum}: "
    if spec.counting.kind == EPOCH_LOOP_STEPS:
        tail = (
            f"the last {plural(leftover, 'micro-batch', 'micro-batches')} of each epoch trigger no optimizer step; their gradients are added "
            "to the next epoch's first step and lost after the last epoch"
        )
    else:
        tail = f"the last optimizer step of each epoch accumulates only {plural(leftover, 'micro-batch', 'micro-batches')}"
    yield Hit(message=head + tail, location=at_key(subject, spec.key("grad_accum"), "gradient_accumulation_steps"))
