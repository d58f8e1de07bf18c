"""lr-plot's own text section: the key numbers and a terminal chart of the schedule (plotext)."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from mldebug_cli.core.findings import Report
from mldebug_cli.formats.schedule_facts import epochs_run, lr_or_none, scheduler, total_steps

CHART_HEIGHT = 18
MAX_CHART_WIDTH = 110
MAX_CHART_POINTS = 2000  # the terminal has far fewer columns; more points only slow plotext down


def render_details(report: Report, console) -> None:
    details = report.details
    console.print(_key_numbers(details))
    console.print()
    schedule = details.get("schedule") or []
    if schedule:
        chart = chart_text(details, width=min(console.width, MAX_CHART_WIDTH), color=console.color_system is not None)
        console.print(Text.from_ansi(chart) if console.color_system is not None else Text(chart))
        console.print(Text(_legend(details), style="dim"))
        console.print()


def _key_numbers(details: dict[str, Any]) -> Table:
    table = Table(title="LR schedule", title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    schedule = details.get("schedule") or []
    rows = [
        ("engine", details.get("engine")),
        ("scheduler", scheduler(details) or "?"),
        ("learning rate", lr_or_none(details.get("learning_rate"))),
        ("training rows", details.get("train_rows")),
        ("micro-batches / epoch / process", details.get("micro_batches_per_epoch")),
        ("gradient accumulation", details.get("gradient_accumulation_steps")),
        ("optimizer steps / epoch", details.get("optimizer_steps_per_epoch")),
        ("total optimizer steps (T)", total_steps(details)),
        ("warmup steps (W)", details.get("warmup_steps")),
        ("epochs run", epochs_run(details)),
    ]
    if schedule:
        peak = max(schedule, key=lambda p: p["lr"])
        rows += [
            ("LR at step 1", lr_or_none(schedule[0]["lr"])),
            ("peak LR", f"{lr_or_none(peak['lr'])} at step {peak['step']}"),
            ("final LR", f"{lr_or_none(schedule[-1]['lr'])} at step {schedule[-1]['step']}"),
        ]
    if details.get("scheduler_error"):
        rows.append(("scheduler error", details["scheduler_error"]))
    for label, value in rows:
        if value is not None:
            table.add_row(label, Text(str(value)))
    return table


def chart_text(details: dict[str, Any], width: int, color: bool = False) -> str:
    """The schedule as a plotext chart: optimizer steps below, micro-batches per process above."""
    import plotext

    schedule = _thin(details["schedule"])
    steps = [p["step"] for p in schedule]
    lrs = [p["lr"] for p in schedule]
    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, CHART_HEIGHT)
    if not color:
        figure.theme("colorless")
    figure.draw(figure.signal(steps, lrs).lines())
    for marker, (step, lr) in _marks(details).items():
        figure.draw(figure.signal([step], [lr], marker=marker))
    overlay = details.get("overlay")
    if overlay:
        logged = overlay["logged"]
        figure.draw(figure.signal([p["step"] for p in logged], [p["lr"] for p in logged], marker="o"))
    warmup_end = _warmup_end(details)
    if warmup_end is not None:
        figure.line(warmup_end, orientation="v")
    last = steps[-1]
    ticks = _ticks(last)
    figure.ruler("x", "lower").lim(1, max(last, 2)).ticks(ticks, [str(t) for t in ticks])
    by_step = {p["step"]: p["micro_batch"] for p in details["schedule"]}
    figure.ruler("x", "upper").lim(1, max(last, 2)).ticks(ticks, [str(by_step.get(t, "")) for t in ticks])
    figure.label("optimizer step", axis="x")
    figure.label("micro-batches consumed (per process)", axis="x", side="upper")
    figure.legend(active=False)
    text = figure.build().string(colorless=not color)
    figure.clear()
    return text


def _thin(schedule: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(schedule) <= MAX_CHART_POINTS:
        return schedule
    stride = len(schedule) / MAX_CHART_POINTS
    picked = [schedule[int(i * stride)] for i in range(MAX_CHART_POINTS)]
    return picked + [schedule[-1]]


def _marks(details: dict[str, Any]) -> dict[str, tuple[int, float]]:
    schedule = details["schedule"]
    peak = max(schedule, key=lambda p: p["lr"])
    return {"P": (peak["step"], peak["lr"]), "F": (schedule[-1]["step"], schedule[-1]["lr"])}


def _warmup_end(details: dict[str, Any]) -> int | None:
    """The first step after warmup, where the LR reaches its peak (None without warmup)."""
    warmup = details.get("warmup_steps") or 0
    total = details.get("total_optimizer_steps") or 0
    return warmup + 1 if 0 < warmup < total else None


def _ticks(last: int) -> list[int]:
    if last <= 6:
        return list(range(1, last + 1))
    count = 6
    return sorted({1, last, *(round(1 + i * (last - 1) / count) for i in range(1, count))})


def _legend(details: dict[str, Any]) -> str:
    schedule = details["schedule"]
    peak = max(schedule, key=lambda p: p["lr"])
    parts = [f"P peak {lr_or_none(peak['lr'])} (step {peak['step']})",
             f"F final {lr_or_none(schedule[-1]['lr'])} (step {schedule[-1]['step']})"]
    warmup_end = _warmup_end(details)
    if warmup_end is not None:
        micro_batch = schedule[min(warmup_end, len(schedule)) - 1]["micro_batch"]
        parts.insert(0, f"| warmup end (step {warmup_end}, micro-batch {micro_batch})")
    if details.get("overlay"):
        parts.append("o logged LR (trainer state)")
    return "  ".join(parts)
