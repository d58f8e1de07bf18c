"""One escaping function for every human-readable output: input text never puts a control byte on a terminal.

C0 and C1 control characters other than newline and tab, and DEL, are shown as ``\\xNN`` (ESC as ``\\x1b``), so
an input cannot set a window title, clear the screen or write the clipboard (OSC 52). Under GitHub Actions a line
of text output that would start with ``::`` (a workflow command such as ``::set-env``) is shown as ``\\::``.
"""

from __future__ import annotations

import os
import re

_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c not in (0x09, 0x0A)}
_ANY_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A line starts after a newline or a carriage return (the runner splits lines on both; `render` keeps a raw CR)
_WORKFLOW_COMMAND = re.compile(r"(?m)(?:^|(?<=\r))([ \t]*(?:\x1b\[[0-9;]*m[ \t]*)*)::")


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab shown as ``\\xNN``."""
    return text.translate(_CONTROLS) if _ANY_CONTROL.search(text) else text


def under_github_actions() -> bool:
    return os.environ.get("GITHUB_ACTIONS") == "true"


def no_workflow_commands(text: str) -> str:
    """Lines that would start a GitHub workflow command (``::name ...``) start with ``\\::`` instead.

    ``text`` is rendered output: SGR colour codes written by mldebug itself before the ``::`` count as line start.
    """
    return _WORKFLOW_COMMAND.sub(r"\1\\::", text) if "::" in text else text
