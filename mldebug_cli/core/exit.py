"""Exit codes, decided in one place."""

from __future__ import annotations

import enum

from mldebug_cli.core.findings import Report, Severity


class ExitCode(enum.IntEnum):
    CLEAN = 0
    FINDINGS = 1
    CANNOT_RUN = 2


def exit_code_for(report: Report, fail_on: Severity) -> ExitCode:
    """1 when any finding is at or above ``fail_on``, else 0."""
    if any(f.severity.rank >= fail_on.rank for f in report.findings):
        return ExitCode.FINDINGS
    return ExitCode.CLEAN
