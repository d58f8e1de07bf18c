"""Output formats: each module renders a Report to a text stream; none of them runs a check.

A format module defines ``render(report, stream, color) -> None``. Machine formats ignore
``color`` and write no ANSI codes.
"""

from __future__ import annotations

import importlib
from typing import IO

from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import Report

FORMATS: dict[str, str] = {
    "text": "text",
    "json": "json_format",
    "csv": "csv_format",
    "sarif": "sarif",
    "junit": "junit",
    "github": "github",
    "markdown": "markdown",
    "html": "html",
}


def check_format(fmt: str) -> str:
    """The module name of format ``fmt``; a one-line usage error for an unknown one."""
    module_name = FORMATS.get(fmt)
    if module_name is None:
        raise UsageError(f"--output-format: unknown format {fmt!r}", hint=f"choose one of {', '.join(FORMATS)}")
    return module_name


def render_report(report: Report, fmt: str, stream: IO[str], color: bool = False) -> None:
    module_name = check_format(fmt)
    module = importlib.import_module(f"mldebug_cli.formats.{module_name}")
    module.render(report, stream, color)
