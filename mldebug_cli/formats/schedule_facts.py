"""The LR-schedule facts the text and HTML reports both show, worded once (numbers from core.numbers)."""

from __future__ import annotations

from mldebug_cli.core.numbers import epochs, lr
from mldebug_cli.core.sections.schedule import ScheduleSection


def total_steps(section: ScheduleSection) -> str | None:
    """``10``, ``12 (10 run)``, or with packing ``10 (packing estimate: 7 to 10)`` / ``10 (packing estimate: at most 10)``."""
    total, span, run = section.total_optimizer_steps, section.total_optimizer_steps_range, section.optimizer_steps_run
    if total is None:
        return None
    if span:
        low, high = span
        return f"{total} (packing estimate: {f'at most {high}' if low is None else f'{low} to {high}'})"
    return f"{total}" + (f" ({run} run)" if run is not None and run != total else "")


def epochs_run(section: ScheduleSection) -> str | None:
    """``2.53 (requested 3)``."""
    run, asked = section.epochs, section.epochs_requested
    if run is None:
        return None
    return f"{epochs(run)} (requested {epochs(asked)})" if asked is not None and abs(run - asked) > 1e-9 else epochs(run)


def scheduler(section: ScheduleSection) -> str | None:
    shown = ", ".join(f"{k}={v}" for k, v in section.scheduler_kwargs.items())
    return None if section.scheduler is None else section.scheduler + (f" ({shown})" if shown else "")


def lr_or_none(value: float | None) -> str | None:
    return None if value is None else lr(value)


def key_numbers(section: ScheduleSection) -> list[tuple[str, object]]:
    """The schedule's key numbers, labelled, as both reports list them (None: not known)."""
    facts: list[tuple[str, object]] = [
        ("engine", section.engine),
        ("scheduler", scheduler(section)),
        ("learning rate", lr_or_none(section.learning_rate)),
        ("training rows", section.train_rows),
        ("micro-batches / epoch / process", section.micro_batches_per_epoch),
        ("gradient accumulation", section.gradient_accumulation_steps),
        ("optimizer steps / epoch", section.optimizer_steps_per_epoch),
        ("total optimizer steps (T)", total_steps(section)),
        ("warmup steps (W)", section.warmup_steps),
        ("epochs run", epochs_run(section)),
    ]
    if section.schedule:
        peak, last = section.peak, section.schedule[-1]
        facts += [
            ("LR at step 1", lr_or_none(section.schedule[0].lr)),
            ("peak LR", f"{lr_or_none(peak.lr)} at step {peak.step}"),
            ("final LR", f"{lr_or_none(last.lr)} at step {last.step}"),
        ]
    return facts
