"""check-run's own text section: a small terminal chart (plotext) of each metric that has findings.

The finding's steps are marked with ``x`` on the curve; non-finite points are left out of the line.
"""

from __future__ import annotations

from rich.text import Text

from mldebug_cli.core.findings import Report
from mldebug_cli.core.sections.runlog import COMPARED, RunSection

CHART_HEIGHT = 10
MAX_CHART_WIDTH = 90
MAX_CHARTS = 4


def render_details(report: Report, console) -> None:
    section = RunSection.from_details(report.details)
    flagged = [r.key for r in section.ranges if r.key]
    shown = [k for k in dict.fromkeys(flagged) if k in section.charts][:MAX_CHARTS]
    shown = [k for key in shown for k in (key, f"{key} {COMPARED}") if k in section.charts]  # --compare: side by side
    color = console.color_system is not None
    for key in shown:
        points = [(s, v) for s, v in section.charts[key] if v is not None]
        if len(points) < 2:
            continue
        marks = _marks(section, key, points)
        chart = chart_text(key, points, marks, width=min(console.width, MAX_CHART_WIDTH), color=color)
        console.print(Text(key, style="bold"))
        console.print(Text.from_ansi(chart) if color else Text(chart))
        console.print()
    _render_batches(section, console)


MAX_ROWS_SHOWN = 24  # rows per step in the text view (JSON has every row)


def _render_batches(section: RunSection, console) -> None:
    """With --config: the rows the batch plan puts in each flagged step, with their file lines."""
    if not section.batches:
        return
    console.print(Text("Rows behind the flagged steps (batch plan)", style="bold"))
    for batch in section.batches:
        rows = [f"{r.row}" + (f" (line {r.line})" if r.line is not None else "") for r in batch.rows]
        more = f", ... {len(rows) - MAX_ROWS_SHOWN} more" if len(rows) > MAX_ROWS_SHOWN else ""
        console.print(Text(f"  {batch.code} step {batch.step} (epoch {batch.epoch + 1}): rows "
                           f"{', '.join(rows[:MAX_ROWS_SHOWN])}{more}"))
    console.print()


def _marks(section: RunSection, key: str, points: list[tuple[int, float]]) -> list[tuple[int, float]]:
    ranges = [(r.first, r.last) for r in section.ranges if r.key == key and r.first is not None and r.last is not None]
    return [(s, v) for s, v in points if any(first <= s <= last for first, last in ranges)]


def chart_text(key: str, points, marks, width: int, color: bool = False) -> str:
    import plotext

    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, CHART_HEIGHT)
    if not color:
        figure.theme("colorless")
    figure.draw(figure.signal([s for s, _v in points], [v for _s, v in points]).lines())
    if marks:
        figure.draw(figure.signal([s for s, _v in marks], [v for _s, v in marks], marker="x"))
    figure.label("optimizer step", axis="x")
    figure.legend(active=False)
    text = figure.build().string(colorless=not color)
    figure.clear()
    return text
