"""lr-plot: the schedule's key numbers and its curve as inline SVG, with warmup end, peak and the logged LR marked."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.sections.preflight import PartView
from mldebug_cli.core.sections.schedule import LoggedPoint, Overlay, SchedulePoint, ScheduleSection
from mldebug_cli.formats.html_parts import svg
from mldebug_cli.formats.html_parts.findings import Anchors
from mldebug_cli.formats.html_parts.markup import Html, el, facts_list
from mldebug_cli.formats.schedule_facts import key_numbers, lr_or_none

NAV = (("schedule", "LR schedule"),)
MAX_CHART_POINTS = 1_500  # per series; the peak, warmup end and last step are always kept
T = TypeVar("T", SchedulePoint, LoggedPoint)


def anchors(part: PartView, prefix: str) -> Anchors:
    return Anchors(keys=f"{prefix}-schedule")


def render(part: PartView, prefix: str, findings: list[Finding]) -> Html:
    section = ScheduleSection.from_details(part.details)
    facts = [*key_numbers(section), ("scheduler error", section.scheduler_error)]
    return el("section", el("h2", "LR schedule"), facts_list(facts),
              _chart(section) if section.schedule else el("p", "No schedule was simulated.", class_="cut"),
              _overlay_note(section.overlay),
              class_="schedule", id=f"{prefix}-schedule")


def _chart(section: ScheduleSection) -> Html:
    schedule = section.schedule
    logged = section.overlay.logged if section.overlay else ()
    last = max(schedule[-1].step, 2)
    top = max([p.lr for p in schedule] + [p.lr for p in logged if p.lr is not None] + [0.0]) or 1.0
    frame = svg.Frame(760, 300, 1, last, 0.0, top * 1.08, left=64, top=24)
    peak = section.peak
    warmup_end = section.warmup_end
    kept = _thin(schedule, {peak.step, warmup_end, schedule[-1].step})
    parts = [
        svg.axes(frame, [t for t in svg.nice_ticks(1, last) if t >= 1], svg.nice_ticks(0, top, 4),
                 _step_tick, lr_or_none, "optimizer step", "learning rate"),
        svg.vertical_marker(frame, warmup_end, f"warmup end (step {warmup_end})", "warmup-end", low=True) if warmup_end else None,
        svg.polyline(frame, [(p.step, p.lr) for p in kept], "curve"),
        _logged(frame, logged),
        _point(frame, peak, "peak", f"peak {lr_or_none(peak.lr)} (step {peak.step})"),
        _point(frame, schedule[-1], "final", f"final {lr_or_none(schedule[-1].lr)} (step {schedule[-1].step})"),
    ]
    caption = "Simulated LR per optimizer step" + (", with the LR the run logged (orange dots)" if logged else "")
    return el("figure", svg.chart(frame, parts, label=caption, class_="chart lr-curve", data_points=len(kept),
                                  data_steps=len(schedule)), el("figcaption", caption))


def _point(frame: svg.Frame, point: SchedulePoint, css_class: str, text: str) -> Html:
    x, y = frame.x(point.step), frame.y(point.lr)
    anchor = "end" if x > frame.width * 0.75 else "start"
    dx = -6 if anchor == "end" else 6
    return el("g", el("circle", el("title", text), cx=svg.num(x), cy=svg.num(y), r=4, class_=css_class),
              el("text", text, x=svg.num(x + dx), y=svg.num(max(y - 6, frame.top)), text_anchor=anchor, class_="mark"),
              class_=css_class + "-point")


def _logged(frame: svg.Frame, logged: tuple[LoggedPoint, ...]) -> Html | None:
    points = [p for p in logged if p.lr is not None and p.step is not None]
    if not points:
        return None
    dots = [el("circle", el("title", _logged_title(p)), cx=svg.num(frame.x(p.step or 0)), cy=svg.num(frame.y(p.lr or 0.0)),
               r=3) for p in _thin(points, set())]
    return el("g", dots, class_="logged", data_count=len(points))


def _logged_title(point: LoggedPoint) -> str:
    return f"step {point.step}: logged {lr_or_none(point.lr)}" + (
        f", simulated {lr_or_none(point.simulated)}" if point.simulated is not None else "")


def _overlay_note(overlay: Overlay | None) -> Html | None:
    if not overlay:
        return None
    explanation = overlay.explanation.message if overlay.explanation else None
    facts = [("trainer state", overlay.trainer_state),
             ("logged values that differ", f"{overlay.mismatched} of {len(overlay.logged)}"),
             ("best explanation", explanation)]
    return facts_list(facts)


def _thin(points: Sequence[T], keep_steps: set[int | None]) -> Sequence[T]:
    if len(points) <= MAX_CHART_POINTS:
        return points
    stride = len(points) / MAX_CHART_POINTS
    picked = {int(i * stride) for i in range(MAX_CHART_POINTS)} | {len(points) - 1}
    picked |= {i for i, p in enumerate(points) if p.step in keep_steps}
    return [points[i] for i in sorted(picked)]


def _step_tick(value: float) -> str:
    return f"{value:,.0f}"
