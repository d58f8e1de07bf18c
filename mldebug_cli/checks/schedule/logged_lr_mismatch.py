"""A real run's logged LR deviates from the simulation.

What it finds
    With ``--trainer-state``, logged ``learning_rate`` values (trainer_state.json ``log_history``)
    that differ from what the simulated run would log at the same step, and the explanation that
    predicts the logged values best: the scheduler stepped per micro-batch, stepped once per
    process, LR logged one step off, a resume with another config, or skipped fp16 steps.

Why it matters for training
    The schedule you configured is not the one that ran: an LR that decays A or P times too fast
    spends most of training near 0; a resume with another epoch count bends the curve mid-run;
    skipped steps shift it later.

Example
    A custom loop calling ``scheduler.step()`` on every micro-batch with accumulation 4: the LR
    reaches 0 after a quarter of the run.

Fix
    Step the scheduler once per optimizer step (``if (i + 1) % accumulation == 0``); with
    accelerate, build it for T x num_processes steps or don't prepare it; resume with the config
    the run started with.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import lr
from mldebug_cli.core.findings import Hit, Location
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    overlay = subject.overlay
    if overlay is None or not overlay.mismatched:
        return
    first = overlay.first_mismatch
    expected = overlay.expected_at(first.step)
    simulated = "nothing (the simulated run has no such step)" if expected is None else lr(expected)
    message = (
        f"{overlay.mismatched} of {len(overlay.logged)} logged LR values differ from the simulation; first at step "
        f"{first.step}: logged {lr(first.lr)}, simulated {simulated}"
    )
    if overlay.explanation is not None:
        message += f". Best explanation: {overlay.explanation.message}"
    yield Hit(message=message, location=Location(path=overlay.path, key=f"log_history[step={first.step}]"))
