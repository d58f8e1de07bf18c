"""The preflight section of the text report: one summary line per part that ran."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from mldebug_cli.core.numbers import count, lr, plural

FINDINGS_FIRST = True  # the findings fit the first screen; each data section's most serious row follows


def render_details(report, console) -> None:
    from mldebug_cli.formats import text_preference
    from mldebug_cli.formats.text_inspect_data import render_row

    for section in report.summary.get("sections", []):
        console.print(_line(section))
    console.print()
    for section in report.details.get("sections", []):
        for row in section.get("rows") or []:
            console.print(Text(f"{section['target']}: the most serious row", style="bold"))
            if "task" in row:  # a preference row: the prompt once, then each side
                text_preference.render_row(row, console)
            else:
                render_row(row, console, False, section.get("findings") or ())


def _line(section: dict[str, Any]) -> Text:
    command, target = section["command"], section["target"]
    text = Text(f"{_LABELS.get(command, command):<9}", style="bold")
    text.append(f"{target}: ")
    text.append(_describe(command, section))
    found = section.get("findings", 0)
    text.append(f"  ({plural(found, 'finding')})" if found else "  (clean)", style="yellow" if found else "green")
    return text


_LABELS = {"inspect-data": "data", "lr-plot": "schedule", "check-template": "template", "memory": "memory"}


def _describe(command: str, s: dict[str, Any]) -> str:
    if command == "inspect-data" and "pairs" in s:
        ratio = s.get("chosen_rejected_length_ratio")
        return (f"{count(s.get('rows_checked') or 0)} of {plural(s.get('rows') or 0, 'row')}, "
                f"{plural(s.get('pairs') or 0, 'pair')}"
                + (f", chosen/rejected length {ratio}" if ratio is not None else "")
                + f", {s.get('rows_dropped', 0)} dropped by the trainer")
    if command == "inspect-data":
        pct = s.get("length_percentiles") or {}
        length = f", length p99 {pct.get('p99')} / max {pct.get('max')} against {s.get('max_length')}" if pct else ""
        return (f"{count(s.get('rows_checked') or 0)} of {plural(s.get('rows') or 0, 'row')}, {plural(s.get('tokens', 0), 'token')},"
                f" {100 * s.get('trainable_fraction', 0):.0f}% trained{length}, {s.get('rows_truncated', 0)} truncated")
    if command == "lr-plot":
        peak, final = s.get("peak_lr"), s.get("final_lr")
        return (f"{plural(s.get('total_optimizer_steps') or 0, 'optimizer step')}, warmup {s.get('warmup_steps')},"
                f" peak LR {'?' if peak is None else lr(peak)}, final LR {'?' if final is None else lr(final)}")
    if command == "memory":
        gib = 1024**3
        fits = s.get("fits")
        verdict = "" if fits is None else (" fits" if fits else " does NOT fit") + f" in {s['gpu_bytes'] / gib:.1f} GiB"
        return (f"peak {s.get('peak_per_gpu_bytes', 0) / gib:.1f} GiB per GPU at {s.get('peak_moment')},{verdict}"
                f" (largest term: {s.get('largest_term')})")
    if command == "check-template":
        compared, identical = s.get("compared", 0), s.get("identical", 0)
        return f"{plural(compared, 'probe conversation')} compared, {compared - identical} differ"
    return ""
