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
    doc.update(report.details)
    return doc


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    json.dump(report_document(report), stream, ensure_ascii=False, indent=1)
    stream.write("\n")
