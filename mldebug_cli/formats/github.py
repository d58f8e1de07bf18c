"""GitHub Actions: ``::error``/``::warning``/``::notice`` annotations grouped by check, and the job summary.

Each check's findings sit in a ``::group::``. The first findings of each kind become annotations with
``file``/``line``/``title``; GitHub shows only ten of a kind per step, so the rest are plain log lines
and a last notice says how many. When ``$GITHUB_STEP_SUMMARY`` is set, the Markdown summary is appended
to that file, cut to keep the step's summary under 1 MiB (GitHub drops a larger one).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import IO

from mldebug_cli.core.errors import MldebugError
from mldebug_cli.core.escape import visible
from mldebug_cli.core.findings import Finding, Report, Severity
from mldebug_cli.formats.locations import describe, finding_path, one_line, repo_path, source_root
from mldebug_cli.formats.markdown import by_check, summary, verdict

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
ANNOTATIONS_PER_KIND = 10  # what GitHub shows per step
SUMMARY_LIMIT = 1024 * 1024  # bytes of one step's summary that GitHub accepts


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    root = source_root()
    for line in workflow_commands(report, root):
        stream.write(visible(line) + "\n")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        append_summary(report, root, Path(summary_file))


def escape_data(text: str) -> str:
    """A command's message, as actions/toolkit escapes it (and control characters shown visibly)."""
    return visible(text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def escape_property(text: str) -> str:
    """A command's property value (``file=``, ``title=``): ``:`` and ``,`` separate properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_commands(report: Report, root: Path) -> list[str]:
    lines = []
    shown: Counter[str] = Counter()
    for code, group in by_check(report.findings):
        lines.append(f"::group::{escape_data(f'{code} {group[0].name} ({len(group)})')}")
        for finding in group:
            kind = COMMANDS[finding.severity]
            shown[kind] += 1
            if shown[kind] <= ANNOTATIONS_PER_KIND:
                lines.append(_annotation(kind, finding, report, root))
            else:
                lines.append(_log_line(finding, report, root))
        lines.append("::endgroup::")
    hidden = sum(max(0, n - ANNOTATIONS_PER_KIND) for n in shown.values())
    if hidden:
        lines.append(f"::notice title=mldebug::{hidden} more findings are in the log groups above and the job summary")
    lines.append(f"mldebug {report.command}: {verdict(report)}")
    return lines


def _annotation(kind: str, finding: Finding, report: Report, root: Path) -> str:
    path = finding_path(finding, report)
    properties = []
    if path is not None:
        properties.append(f"file={escape_property(repo_path(path, root))}")
        if finding.location.line is not None:
            properties.append(f"line={finding.location.line}")
    properties.append(f"title={escape_property(f'{finding.code} {finding.name}')}")
    message = describe(finding) + (f"\nhint: {finding.hint}" if finding.hint else "")
    return f"::{kind} {','.join(properties)}::{escape_data(message)}"


def _log_line(finding: Finding, report: Report, root: Path) -> str:
    """A finding past the annotation limit; it starts with its severity, so never reads as a command."""
    path = finding_path(finding, report)
    where = ""
    if path is not None:
        line = finding.location.line
        where = repo_path(path, root) + (f":{line}" if line is not None else "") + ": "
    return f"{finding.severity.value}: {one_line(where + describe(finding))}"


def append_summary(report: Report, root: Path, summary_file: Path) -> None:
    try:
        used = summary_file.stat().st_size if summary_file.exists() else 0
        separator = "\n" if used else ""
        text = summary(report, root, limit=SUMMARY_LIMIT - 1 - used - len(separator))
        if text:
            with summary_file.open("a", encoding="utf-8") as stream:
                stream.write(separator + text)
    except OSError as exc:
        raise MldebugError(
            f"$GITHUB_STEP_SUMMARY ({summary_file}): cannot append the job summary: {exc.strerror or exc}"
        ) from None
