"""lr-plot: the schedule's key numbers and its curve as inline SVG, with warmup end, peak and the logged LR marked."""

from __future__ import annotations

from typing import Any

from mldebug_cli.formats.html_parts import svg
from mldebug_cli.formats.html_parts.findings import Anchors
from mldebug_cli.formats.html_parts.markup import Html, el, facts_list
from mldebug_cli.formats.schedule_facts import epochs_run, lr_or_none, scheduler, total_steps

NAV = (("schedule", "LR schedule"),)
MAX_CHART_POINTS = 1_500  # per series; the peak, warmup end and last step are always kept


def anchors(doc: dict[str, Any], prefix: str) -> Anchors:
    return Anchors(keys=f"{prefix}-schedule")


def render(doc: dict[str, Any], prefix: str, findings: list[dict[str, Any]]) -> Html:
    schedule = doc.get("schedule") or []
    return el("section", el("h2", "LR schedule"), facts_list(_key_numbers(doc, schedule)),
              _chart(doc, schedule) if schedule else el("p", "No schedule was simulated.", class_="cut"),
              _overlay_note(doc.get("overlay")),
              class_="schedule", id=f"{prefix}-schedule")


def _key_numbers(doc: dict[str, Any], schedule: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    facts: list[tuple[str, Any]] = [
        ("engine", doc.get("engine")),
        ("scheduler", scheduler(doc)),
        ("learning rate", lr_or_none(doc.get("learning_rate"))),
        ("training rows", doc.get("train_rows")),
        ("micro-batches / epoch / process", doc.get("micro_batches_per_epoch")),
        ("gradient accumulation", doc.get("gradient_accumulation_steps")),
        ("optimizer steps / epoch", doc.get("optimizer_steps_per_epoch")),
        ("total optimizer steps (T)", total_steps(doc)),
        ("warmup steps (W)", doc.get("warmup_steps")),
        ("epochs run", epochs_run(doc)),
    ]
    if schedule:
        peak = _peak(schedule)
        facts += [("LR at step 1", lr_or_none(schedule[0]["lr"])),
                  ("peak LR", f"{lr_or_none(peak['lr'])} at step {peak['step']}"),
                  ("final LR", f"{lr_or_none(schedule[-1]['lr'])} at step {schedule[-1]['step']}")]
    facts.append(("scheduler error", doc.get("scheduler_error")))
    return facts


def _chart(doc: dict[str, Any], schedule: list[dict[str, Any]]) -> Html:
    logged = (doc.get("overlay") or {}).get("logged") or []
    last = max(schedule[-1]["step"], 2)
    top = max([p["lr"] for p in schedule] + [p["lr"] for p in logged if p.get("lr") is not None] + [0.0]) or 1.0
    frame = svg.Frame(760, 300, 1, last, 0.0, top * 1.08, left=64, top=24)
    peak = _peak(schedule)
    warmup_end = warmup_end_step(doc)
    kept = _thin(schedule, {peak["step"], warmup_end, schedule[-1]["step"]})
    parts = [
        svg.axes(frame, [t for t in svg.nice_ticks(1, last) if t >= 1], svg.nice_ticks(0, top, 4),
                 _step_tick, lr_or_none, "optimizer step", "learning rate"),
        svg.vertical_marker(frame, warmup_end, f"warmup end (step {warmup_end})", "warmup-end", low=True) if warmup_end else None,
        svg.polyline(frame, [(p["step"], p["lr"]) for p in kept], "curve"),
        _logged(frame, logged),
        _point(frame, peak, "peak", f"peak {lr_or_none(peak['lr'])} (step {peak['step']})"),
        _point(frame, schedule[-1], "final", f"final {lr_or_none(schedule[-1]['lr'])} (step {schedule[-1]['step']})"),
    ]
    caption = "Simulated LR per optimizer step" + (", with the LR the run logged (orange dots)" if logged else "")
    return el("figure", svg.chart(frame, parts, label=caption, class_="chart lr-curve", data_points=len(kept),
                                  data_steps=len(schedule)), el("figcaption", caption))


def warmup_end_step(doc: dict[str, Any]) -> int | None:
    """The first step after warmup, where the LR reaches its peak (None without warmup), as the text chart marks it."""
    warmup, total = doc.get("warmup_steps") or 0, doc.get("total_optimizer_steps") or 0
    return warmup + 1 if 0 < warmup < total else None


def _point(frame: svg.Frame, point: dict[str, Any], css_class: str, text: str) -> Html:
    x, y = frame.x(point["step"]), frame.y(point["lr"])
    anchor = "end" if x > frame.width * 0.75 else "start"
    dx = -6 if anchor == "end" else 6
    return el("g", el("circle", el("title", text), cx=svg.num(x), cy=svg.num(y), r=4, class_=css_class),
              el("text", text, x=svg.num(x + dx), y=svg.num(max(y - 6, frame.top)), text_anchor=anchor, class_="mark"),
              class_=css_class + "-point")


def _logged(frame: svg.Frame, logged: list[dict[str, Any]]) -> Html | None:
    points = [p for p in logged if p.get("lr") is not None and p.get("step") is not None]
    if not points:
        return None
    dots = [el("circle", el("title", _logged_title(p)), cx=svg.num(frame.x(p["step"])), cy=svg.num(frame.y(p["lr"])),
               r=3) for p in _thin(points, set())]
    return el("g", dots, class_="logged", data_count=len(points))


def _logged_title(point: dict[str, Any]) -> str:
    simulated = point.get("simulated")
    return f"step {point['step']}: logged {lr_or_none(point['lr'])}" + (
        f", simulated {lr_or_none(simulated)}" if simulated is not None else "")


def _overlay_note(overlay: dict[str, Any] | None) -> Html | None:
    if not overlay:
        return None
    explanation = (overlay.get("explanation") or {}).get("message")
    facts = [("trainer state", overlay.get("trainer_state")),
             ("logged values that differ", f"{overlay.get('mismatched', 0)} of {len(overlay.get('logged') or [])}"),
             ("best explanation", explanation)]
    return facts_list(facts)


def _thin(points: list[dict[str, Any]], keep_steps: set[int | None]) -> list[dict[str, Any]]:
    if len(points) <= MAX_CHART_POINTS:
        return points
    stride = len(points) / MAX_CHART_POINTS
    picked = {int(i * stride) for i in range(MAX_CHART_POINTS)} | {len(points) - 1}
    picked |= {i for i, p in enumerate(points) if p["step"] in keep_steps}
    return [points[i] for i in sorted(picked)]


def _peak(schedule: list[dict[str, Any]]) -> dict[str, Any]:
    return max(schedule, key=lambda p: p["lr"])


def _step_tick(value: float) -> str:
    return f"{value:,.0f}"
