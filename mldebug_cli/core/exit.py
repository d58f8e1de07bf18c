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
    worst = report.worst()
    if worst is not None and worst.rank >= fail_on.rank:
        return ExitCode.FINDINGS
    return ExitCode.CLEAN
