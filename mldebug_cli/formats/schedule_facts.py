"""The LR-schedule facts the text and HTML reports both show, worded once (numbers from core.numbers)."""

from __future__ import annotations

from typing import Any

from mldebug_cli.core.numbers import epochs, lr


def total_steps(doc: dict[str, Any]) -> str | None:
    """``10``, ``12 (10 run)``, or with packing ``10 (packing estimate: 7 to 10)`` / ``10 (packing estimate: at most 10)``."""
    total, span, run = doc.get("total_optimizer_steps"), doc.get("total_optimizer_steps_range"), doc.get("optimizer_steps_run")
    if total is None:
        return None
    if span:
        low, high = span
        return f"{total} (packing estimate: {f'at most {high}' if low is None else f'{low} to {high}'})"
    return f"{total}" + (f" ({run} run)" if run is not None and run != total else "")


def epochs_run(doc: dict[str, Any]) -> str | None:
    """``2.53 (requested 3)``."""
    run, asked = doc.get("epochs"), doc.get("epochs_requested")
    if run is None:
        return None
    return f"{epochs(run)} (requested {epochs(asked)})" if asked is not None and abs(run - asked) > 1e-9 else epochs(run)


def scheduler(doc: dict[str, Any]) -> str | None:
    kwargs = doc.get("scheduler_kwargs") or {}
    shown = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    return None if doc.get("scheduler") is None else doc["scheduler"] + (f" ({shown})" if shown else "")


def lr_or_none(value: float | None) -> str | None:
    return None if value is None else lr(value)
