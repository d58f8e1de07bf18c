"""check-run: one SVG panel per charted metric (loss, eval loss, grad norm, LR, reward...), finding ranges shaded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.sections.preflight import PartView
from mldebug_cli.core.sections.runlog import FindingRange, RunSection
from mldebug_cli.formats.html_parts import svg
from mldebug_cli.formats.html_parts.findings import Anchors
from mldebug_cli.formats.html_parts.markup import Html, el, void

NAV = (("metrics", "Metrics"),)


def anchors(part: PartView, prefix: str) -> Anchors:
    return Anchors()


def render(part: PartView, prefix: str, findings: list[Finding]) -> Html:
    section = RunSection.from_details(part.details)
    panels = [_panel(key, points, section.ranges_of(key)) for key, points in section.charts.items()]
    return el("section", el("h2", "Metrics"), [p for p in panels if p is not None] or
              el("p", "No metric to chart.", class_="cut"), class_="metrics", id=f"{prefix}-metrics")


def _panel(key: str, points: Sequence[Sequence[Any]], ranges: list[FindingRange]) -> Html | None:
    finite = [(s, v) for s, v in points if v is not None]
    if len(finite) < 2:
        return None
    lo, hi = min(v for _s, v in finite), max(v for _s, v in finite)
    pad = (hi - lo) * 0.06 or abs(hi) * 0.06 or 1.0
    first, last = finite[0][0], max(finite[-1][0], finite[0][0] + 1)
    frame = svg.Frame(760, 220, first, last, lo - pad, hi + pad, left=64, top=20)
    shaded = [_shade(frame, r) for r in ranges]
    parts = [
        *shaded,
        svg.axes(frame, svg.nice_ticks(first, last), svg.nice_ticks(lo - pad, hi + pad, 4), _tick, _tick,
                 "optimizer step", key),
        svg.polyline(frame, finite, "curve"),
    ]
    caption = f"{key} per logged step" + (" (shaded: the steps of a finding)" if shaded else "")
    return el("figure", svg.chart(frame, parts, label=caption, class_="chart run-metric", data_key=key),
              el("figcaption", caption))


def _shade(frame: svg.Frame, found: FindingRange) -> Html:
    assert found.first is not None and found.last is not None  # only ranges with steps are shaded
    x0, x1 = frame.x(max(found.first, frame.x_lo)), frame.x(min(found.last, frame.x_hi))
    width = max(x1 - x0, 3.0)
    return void("rect", x=svg.num(x0 - (1.5 if x1 - x0 < 3 else 0)), y=frame.top, width=svg.num(width),
                height=svg.num(frame.floor - frame.top), class_="finding-range", data_code=found.code)


def _tick(value: float) -> str:
    return f"{value:.3g}"
