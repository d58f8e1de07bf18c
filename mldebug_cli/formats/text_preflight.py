"""The preflight section of the text report: one summary line per part that ran."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from mldebug_cli.core.numbers import count, lr, plural
from mldebug_cli.core.sections.memory import MemorySummary
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary
from mldebug_cli.core.sections.preflight import PartSummary, PreflightSection
from mldebug_cli.core.sections.probes import ProbesSummary
from mldebug_cli.core.sections.rows import RowsSection, RowsSummary
from mldebug_cli.core.sections.schedule import ScheduleSummary
from mldebug_cli.formats import text_preference
from mldebug_cli.formats.text_inspect_data import render_row

FINDINGS_FIRST = True  # the findings fit the first screen; each data section's most serious row follows


def render_details(report, console) -> None:
    for line in PreflightSection.summary_lines(report.summary):
        console.print(_line(line))
    console.print()
    for part in PreflightSection.from_details(report.details).parts:
        if PairsSummary.describes(part.summary):  # preference rows: the prompt once, then each side
            for pair in PairsSection.from_details(part.details).rows:
                console.print(Text(f"{part.target}: the most serious row", style="bold"))
                text_preference.render_row(pair, console)
            continue
        for row in RowsSection.from_details(part.details).rows:
            console.print(Text(f"{part.target}: the most serious row", style="bold"))
            render_row(row, console, False, part.findings)


def _line(line: PartSummary) -> Text:
    command, target = line.command, line.target
    text = Text(f"{_LABELS.get(command, command):<9}", style="bold")
    text.append(f"{target}: ")
    text.append(_describe(command, line.summary))
    found = line.findings
    text.append(f"  ({plural(found, 'finding')})" if found else "  (clean)", style="yellow" if found else "green")
    return text


_LABELS = {"inspect-data": "data", "lr-plot": "schedule", "check-template": "template", "memory": "memory"}


def _describe(command: str, summary: Mapping[str, Any]) -> str:
    if command == "inspect-data" and PairsSummary.describes(summary):
        pairs = PairsSummary.from_dict(summary)
        ratio = pairs.chosen_rejected_length_ratio
        return (f"{count(pairs.rows_checked)} of {plural(pairs.rows, 'row')}, {plural(pairs.pairs, 'pair')}"
                + (f", chosen/rejected length {ratio}" if ratio is not None else "")
                + f", {pairs.rows_dropped} dropped by the trainer")
    if command == "inspect-data":
        rows = RowsSummary.from_dict(summary)
        pct = rows.length_percentiles
        length = f", length p99 {pct.p99} / max {pct.max} against {rows.max_length}" if pct else ""
        return (f"{count(rows.rows_checked)} of {plural(rows.rows, 'row')}, {plural(rows.tokens, 'token')},"
                f" {100 * rows.trainable_fraction:.0f}% trained{length}, {rows.rows_truncated} truncated")
    if command == "lr-plot":
        schedule = ScheduleSummary.from_dict(summary)
        peak, final = schedule.peak_lr, schedule.final_lr
        return (f"{plural(schedule.total_optimizer_steps or 0, 'optimizer step')}, warmup {schedule.warmup_steps},"
                f" peak LR {'?' if peak is None else lr(peak)}, final LR {'?' if final is None else lr(final)}")
    if command == "memory":
        gib = 1024**3
        memory = MemorySummary.from_dict(summary)
        fits = memory.fits
        verdict = "" if fits is None else (" fits" if fits else " does NOT fit") + f" in {(memory.gpu_bytes or 0) / gib:.1f} GiB"
        return (f"peak {memory.peak_per_gpu_bytes / gib:.1f} GiB per GPU at {memory.peak_moment},{verdict}"
                f" (largest term: {memory.largest_term})")
    if command == "check-template":
        probes = ProbesSummary.from_dict(summary)
        return f"{plural(probes.compared, 'probe conversation')} compared, {probes.compared - probes.identical} differ"
    return ""
