"""Where a finding points, as the CI formats show it: a repository-relative path and a one-line place."""

from __future__ import annotations

import os
from pathlib import Path

from mldebug_cli.core.findings import Finding, Location, Report


def source_root() -> Path:
    """The repository root paths are made relative to: the checkout under GitHub Actions, else the cwd."""
    return Path(os.path.abspath(os.environ.get("GITHUB_WORKSPACE") or os.getcwd()))


def repo_path(path: str, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators; absolute when it lies outside ``root``."""
    absolute = Path(os.path.abspath(path))
    return (absolute.relative_to(root) if absolute.is_relative_to(root) else absolute).as_posix()


def finding_path(finding: Finding, report: Report) -> str | None:
    """The file a finding is about: its own path, else the first input the checks ran on."""
    return finding.location.path or (report.targets[0] if report.targets else None)


def place(location: Location) -> str:
    """The logical place of a finding, e.g. ``row 3 (line 121), message 2`` or ``key training.warmup_steps``."""
    parts = []
    if location.step is not None:
        end = location.step_end
        parts.append(f"steps {location.step}-{end}" if end is not None and end != location.step
                     else f"step {location.step}")
    if location.row is not None:
        parts.append(f"row {location.row}" + (f" (line {location.line})" if location.line is not None else ""))
    elif location.line is not None:
        parts.append(f"line {location.line}")
    if location.message_index is not None:
        parts.append(f"message {location.message_index}")
    if location.key:
        parts.append(f"key {location.key}")
    if location.probe:
        parts.append(f"probe {location.probe}")
    if location.side:
        parts.append(location.side)
    return ", ".join(parts)


def describe(finding: Finding) -> str:
    """The finding's message after its place: ``row 3 (line 121), message 2: <message>``."""
    where = place(finding.location)
    return f"{where}: {finding.message}" if where else finding.message


def one_line(text: str) -> str:
    """Data text on one line: training data carries newlines that would break line-based formats."""
    return text.replace("\r\n", "\n").replace("\r", "\\r").replace("\n", "\\n")
