"""Consoles for stdout (the report) and stderr (progress, errors), with colour following the user."""

from __future__ import annotations

import functools
import os
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def use_color(choice: str, stream: IO[str]) -> bool:
    """``--color auto|always|never``; ``auto`` honours NO_COLOR/FORCE_COLOR and whether ``stream`` is a tty."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def make_console(stream: IO[str] | None = None, color: bool = False, width: int | None = None) -> Console:
    """A rich console whose output shows input control characters visibly (``core/escape.py``)."""
    stream = stream if stream is not None else sys.stdout
    return _escaping_console_class()(
        file=stream,
        color_system="truecolor" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,
        soft_wrap=False,
        width=width or (None if color else 120),
    )


def stderr_console(color_choice: str = "auto") -> Console:
    return make_console(sys.stderr, use_color(color_choice, sys.stderr))


@functools.cache
def _escaping_console_class() -> type[Console]:
    from rich.console import Console
    from rich.segment import Segment

    from mldebug_cli.core.escape import no_workflow_commands, under_github_actions, visible

    class EscapingConsole(Console):
        """Text segments pass through ``visible`` just before they are written: rich's own colour codes stay, the
        input's control characters do not (rich keeps ESC in text)."""

        def _render_buffer(self, buffer):
            escaped = (segment if segment.control else Segment(visible(segment.text), segment.style, segment.control)
                       for segment in buffer)
            rendered = super()._render_buffer(escaped)
            return no_workflow_commands(rendered) if under_github_actions() else rendered

    return EscapingConsole
