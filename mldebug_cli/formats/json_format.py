"""JSON: the stable contract other tools and CI read."""

from __future__ import annotations

import json
from typing import IO, Any

from mldebug_cli import __version__
from mldebug_cli.core.findings import Report


def report_document(report: Report) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "tool": {"name": "mldebug", "version": __version__},
        "command": report.command,
        "context": dict(report.context),
        "findings": [f.as_dict() for f in report.findings],
        "summary": dict(report.summary),
    }
    if report.not_kept:  # past the first KEPT_PER_CHECK findings of a check: counted, not listed
        doc["findings_not_kept"] = [n.as_dict() for n in report.not_kept]
    doc.update(report.details)
    return doc


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    json.dump(report_document(report), stream, ensure_ascii=False, indent=1)
    stream.write("\n")
