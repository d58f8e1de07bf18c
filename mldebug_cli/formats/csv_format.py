"""CSV: lr-plot's schedule one optimizer step a row (with the logged LR when overlaid); other reports' findings."""

from __future__ import annotations

import csv
from typing import IO, Any

from mldebug_cli.core.findings import Report
from mldebug_cli.core.sections.schedule import ScheduleSection

SCHEDULE_COLUMNS = ("step", "micro_batch", "epoch", "lr")
FINDING_COLUMNS = ("code", "name", "severity", "message", "path", "row", "line", "key")


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    writer = csv.writer(stream, lineterminator="\n")
    if ScheduleSection.KEY in report.details:
        _schedule(ScheduleSection.from_details(report.details), writer)
    else:
        _findings(report, writer)


def _schedule(section: ScheduleSection, writer) -> None:
    overlay = section.overlay
    logged = {p.step: p.lr for p in overlay.logged} if overlay else None
    writer.writerow(SCHEDULE_COLUMNS + (("logged_lr",) if logged is not None else ()))
    for point in section.schedule:
        row = [_cell(point.step), _cell(point.micro_batch), _cell(point.epoch), _cell(point.lr)]
        if logged is not None:
            row.append(_cell(logged.get(point.step)))
        writer.writerow(row)


def _findings(report: Report, writer) -> None:
    writer.writerow(FINDING_COLUMNS)
    for f in report.findings:
        loc = f.location
        writer.writerow([f.code, f.name, f.severity.value, f.message, _cell(loc.path), _cell(loc.row),
                         _cell(loc.line), _cell(loc.key)])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)  # repr keeps every digit of an LR
