"""lr-plot's own text section: the key numbers and a terminal chart of the schedule (plotext)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from mldebug_cli.core.findings import Report
from mldebug_cli.core.sections.schedule import SchedulePoint, ScheduleSection
from mldebug_cli.formats.schedule_facts import key_numbers, lr_or_none

CHART_HEIGHT = 18
MAX_CHART_WIDTH = 110
MAX_CHART_POINTS = 2000  # the terminal has far fewer columns; more points only slow plotext down


def render_details(report: Report, console) -> None:
    section = ScheduleSection.from_details(report.details)
    console.print(_key_numbers(section))
    console.print()
    if section.schedule:
        chart = chart_text(section, width=min(console.width, MAX_CHART_WIDTH), color=console.color_system is not None)
        console.print(Text.from_ansi(chart) if console.color_system is not None else Text(chart))
        console.print(Text(_legend(section), style="dim"))
        console.print()


def _key_numbers(section: ScheduleSection) -> Table:
    table = Table(title="LR schedule", title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="dim")
    table.add_column()
    rows = [(label, (value or "?") if label == "scheduler" else value) for label, value in key_numbers(section)]
    if section.scheduler_error:
        rows.append(("scheduler error", section.scheduler_error))
    for label, value in rows:
        if value is not None:
            table.add_row(label, Text(str(value)))
    return table


def chart_text(section: ScheduleSection, width: int, color: bool = False) -> str:
    """The schedule as a plotext chart: optimizer steps below, micro-batches per process above."""
    import plotext

    schedule = _thin(section.schedule)
    steps = [p.step for p in schedule]
    lrs = [p.lr for p in schedule]
    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, CHART_HEIGHT)
    if not color:
        figure.theme("colorless")
    figure.draw(figure.signal(steps, lrs).lines())
    for marker, point in _marks(section).items():
        figure.draw(figure.signal([point.step], [point.lr], marker=marker))
    if section.overlay:
        logged = section.overlay.logged
        figure.draw(figure.signal([p.step for p in logged], [p.lr for p in logged], marker="o"))
    warmup_end = section.warmup_end
    if warmup_end is not None:
        figure.line(warmup_end, orientation="v")
    last = steps[-1]
    ticks = _ticks(last)
    figure.ruler("x", "lower").lim(1, max(last, 2)).ticks(ticks, [str(t) for t in ticks])
    by_step = {p.step: p.micro_batch for p in section.schedule}
    figure.ruler("x", "upper").lim(1, max(last, 2)).ticks(ticks, [str(by_step.get(t, "")) for t in ticks])
    figure.label("optimizer step", axis="x")
    figure.label("micro-batches consumed (per process)", axis="x", side="upper")
    figure.legend(active=False)
    text = figure.build().string(colorless=not color)
    figure.clear()
    return text


def _thin(schedule: tuple[SchedulePoint, ...]) -> tuple[SchedulePoint, ...]:
    if len(schedule) <= MAX_CHART_POINTS:
        return schedule
    stride = len(schedule) / MAX_CHART_POINTS
    picked = [schedule[int(i * stride)] for i in range(MAX_CHART_POINTS)]
    return (*picked, schedule[-1])


def _marks(section: ScheduleSection) -> dict[str, SchedulePoint]:
    return {"P": section.peak, "F": section.schedule[-1]}


def _ticks(last: int) -> list[int]:
    if last <= 6:
        return list(range(1, last + 1))
    count = 6
    return sorted({1, last, *(round(1 + i * (last - 1) / count) for i in range(1, count))})


def _legend(section: ScheduleSection) -> str:
    schedule, peak = section.schedule, section.peak
    parts = [f"P peak {lr_or_none(peak.lr)} (step {peak.step})",
             f"F final {lr_or_none(schedule[-1].lr)} (step {schedule[-1].step})"]
    warmup_end = section.warmup_end
    if warmup_end is not None:
        micro_batch = schedule[min(warmup_end, len(schedule)) - 1].micro_batch
        parts.insert(0, f"| warmup end (step {warmup_end}, micro-batch {micro_batch})")
    if section.overlay:
        parts.append("o logged LR (trainer state)")
    return "  ".join(parts)
