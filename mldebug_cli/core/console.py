"""Consoles for stdout (the report) and stderr (progress, errors), with colour following the user."""

from __future__ import annotations

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
    from rich.console import Console

    stream = stream if stream is not None else sys.stdout
    return Console(
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
