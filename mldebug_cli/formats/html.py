"""HTML: one self-contained page (inline CSS and SVG, no script, nothing fetched) to open offline or keep in CI.

``render_html(report, versions)`` is a pure function of the report; ``render`` adds the versions of
the libraries installed here, which are part of what was checked.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from importlib import metadata
from typing import IO

from mldebug_cli import __version__
from mldebug_cli.core.findings import Report
from mldebug_cli.formats.html_parts.page import render_page

VERSIONED = ("transformers", "tokenizers", "jinja2", "datasets", "torch")


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    stream.write(render_html(report, installed_versions()))


def render_html(report: Report, versions: Mapping[str, str] | None = None) -> str:
    return str(render_page(report, versions or {"mldebug": __version__}))


def installed_versions() -> dict[str, str]:
    """mldebug, Python, and the libraries whose behaviour the checks emulate, as installed here."""
    versions = {"mldebug": __version__, "python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions
