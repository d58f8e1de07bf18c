"""Small inline-SVG charts: axes with round ticks, bars, a polyline. Numbers in, markup out."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mldebug_cli.formats.html_parts.markup import Html, el, void


@dataclass(frozen=True)
class Frame:
    """A chart's pixel box and the data ranges mapped onto it (y grows upwards)."""

    width: int
    height: int
    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    left: int = 56
    right: int = 16
    top: int = 16
    bottom: int = 36

    def x(self, value: float) -> float:
        span = (self.x_hi - self.x_lo) or 1.0
        return self.left + (value - self.x_lo) / span * (self.width - self.left - self.right)

    def y(self, value: float) -> float:
        span = (self.y_hi - self.y_lo) or 1.0
        return self.height - self.bottom - (value - self.y_lo) / span * (self.height - self.top - self.bottom)

    @property
    def floor(self) -> float:
        return self.height - self.bottom


def num(value: float) -> str:
    """A coordinate, short."""
    return f"{value:.1f}"


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step) * step
    ticks, value = [], first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def chart(frame: Frame, *children: object, label: str, **attributes: object) -> Html:
    return el("svg", el("title", label), *children, xmlns="http://www.w3.org/2000/svg", role="img",
              viewBox=f"0 0 {frame.width} {frame.height}", width=frame.width, height=frame.height, **attributes)


def axes(frame: Frame, x_ticks: list[float], y_ticks: list[float], x_fmt, y_fmt, x_label: str, y_label: str) -> Html:
    """Grid lines, tick labels and axis titles."""
    parts: list[Html] = []
    for value in y_ticks:
        y = num(frame.y(value))
        parts.append(void("line", x1=frame.left, x2=frame.width - frame.right, y1=y, y2=y, class_="grid"))
        parts.append(el("text", y_fmt(value), x=frame.left - 6, y=y, text_anchor="end", dominant_baseline="middle"))
    for value in x_ticks:
        x = num(frame.x(value))
        parts.append(void("line", x1=x, x2=x, y1=num(frame.floor), y2=num(frame.floor + 4), class_="axis"))
        parts.append(el("text", x_fmt(value), x=x, y=num(frame.floor + 16), text_anchor="middle"))
    parts.append(void("line", x1=frame.left, x2=frame.width - frame.right, y1=num(frame.floor), y2=num(frame.floor),
                      class_="axis"))
    parts.append(el("text", x_label, x=num((frame.left + frame.width - frame.right) / 2), y=frame.height - 4,
                    text_anchor="middle"))
    parts.append(el("text", y_label, x=4, y=frame.top - 4))
    return el("g", parts, class_="axes")


def vertical_marker(frame: Frame, at: float, text: str, css_class: str, low: bool = False) -> Html:
    """A dashed vertical line at ``at`` with its label at the top (or near the bottom when ``low``)."""
    x = frame.x(at)
    y = frame.floor - 8 if low else frame.top + 10
    return el("g",
              void("line", x1=num(x), x2=num(x), y1=frame.top, y2=num(frame.floor), class_=css_class),
              el("text", text, x=num(x + 4), y=num(y), class_="mark"),
              class_=css_class + "-marker")


def polyline(frame: Frame, points: list[tuple[float, float]], css_class: str) -> Html:
    coords = " ".join(f"{num(frame.x(x))},{num(frame.y(y))}" for x, y in points)
    return void("polyline", points=coords, class_=css_class)
