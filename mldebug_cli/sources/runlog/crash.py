"""The crash part of a console log (or a captured stderr): the error lines a run printed and where its steps stopped.

The reader keeps, with their 1-based line numbers, the lines that report a failure: a Python exception
line (``ValueError: ...``, ``torch.OutOfMemoryError: ...``, also behind a ``[rank0]:`` prefix), the
elastic launcher's ``exitcode: -9`` and ``Signal 9 (SIGKILL)`` lines, the shell's ``Killed``, NCCL's
watchdog timeout, ``terminate called after throwing``, a segmentation fault, axolotl's warnings that
it could not find a turn's content in the rendered template, and its warning ``unable to load strategy X``
(its loader returns None, which the caller then calls). Which failure they mean, with its cause
and fix, is the run-crashed check's business (RN040); this module only finds them, cheaply: a line is
matched only when it holds one of a few substrings.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from datetime import datetime

MAX_KEPT = 64  # error lines kept (the first ones and the last ones); a log that prints one per step stays small
MAX_TEXT = 400  # characters of an error line kept

_EXCEPTION = re.compile(
    r"^(?:\[(?:rank|Rank )?\d+\]:?\s*)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure))"
    r"(?::\s*(.*))?$")
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")  # ANSI colour and other controls
_EXITCODE = re.compile(r"exitcode\s*:\s*(-?\d+)")
_STAMP_STARTS = frozenset("[0123456789")
_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d)[ T](\d\d):(\d\d):(\d\d)")



@dataclass(frozen=True)
class ErrorLine:
    line: int
    kind: str  # exception | exitcode | signal | killed | watchdog | fatal | template-boundary | strategy-load
    text: str
    name: str = ""  # the exception's class (``ValueError``), when it is one


class CrashScan:
    """Fed every line of a console log; keeps the error lines and the time stamps it needs for RN040/RN041."""

    def __init__(self) -> None:
        self.first: list[ErrorLine] = []
        self.last: list[ErrorLine] = []
        self.seen = 0
        self.stamp_lines = array("q")  # lines whose time stamp differs from the previous stamp's second
        self.stamp_times = array("q")  # those stamps, in seconds
        self._last_text = ""

    def feed(self, text: str, number_: int) -> None:
        if text[:2] == "{'" or not _may_report(text):  # a metric dict (most lines of a log), or no error word
            if text[:1] in _STAMP_STARTS:  # a time stamp opens the line: "2026-04-17 ...", "[2026-04-17 ..."
                self._stamp(text, number_)
            return
        self._stamp(text, number_)
        for part in text.replace("\r", "\n").split("\n"):
            found = _classify(_CONTROL.sub("", part).strip(), number_)
            if found is not None:
                self._keep(found)

    def _stamp(self, text: str, number_: int) -> None:
        match = _TIMESTAMP.search(text[:64])
        if not match or match.group(0) == self._last_text:
            return
        try:
            moment = datetime.fromisoformat(f"{match.group(1)} {match.group(2)}:{match.group(3)}:{match.group(4)}")
        except ValueError:
            return
        self._last_text = match.group(0)
        self.stamp_lines.append(number_)
        self.stamp_times.append(int(moment.timestamp()))

    def stalled(self, last_metric_line: int, points: int) -> tuple[int, int, float] | None:
        """(line of the last stamp, seconds from the last metric record to it, seconds per logged point) when
        the log's time stamps go on after its last metric record, else None."""
        from bisect import bisect_right

        if not last_metric_line or points < 2 or len(self.stamp_lines) < 2:
            return None
        at = bisect_right(self.stamp_lines, last_metric_line) - 1
        if at < 0 or at == len(self.stamp_lines) - 1:
            return None
        span = self.stamp_times[at] - self.stamp_times[0]
        waited = self.stamp_times[-1] - self.stamp_times[at]
        return self.stamp_lines[-1], waited, max(span, 1) / (points - 1)

    def _keep(self, found: ErrorLine) -> None:
        self.seen += 1
        if len(self.first) < MAX_KEPT // 2:
            self.first.append(found)
            return
        self.last.append(found)
        if len(self.last) > MAX_KEPT // 2:
            del self.last[0]

    @property
    def errors(self) -> tuple[ErrorLine, ...]:
        return tuple(self.first) + tuple(self.last)


def _may_report(text: str) -> bool:
    """Whether a line holds a word an error line has (plain substring tests: the fastest filter in CPython)."""
    return ("rror" in text or "xception" in text or "exitcode" in text or "Killed" in text or "SIGKILL" in text
            or "Watchdog" in text or "terminate called" in text or "Segmentation fault" in text
            or "boundary" in text or "Failure" in text or "unable to load strategy" in text or "SIGBUS" in text)


def _classify(text: str, number_: int) -> ErrorLine | None:
    if not text:
        return None
    text = text[:MAX_TEXT]
    if "Content end boundary" in text or "content start/end boundary" in text or "Could not find content" in text:
        return ErrorLine(number_, "template-boundary", text)
    if "Watchdog caught collective operation timeout" in text:
        return ErrorLine(number_, "watchdog", text)
    if "unable to load strategy" in text:  # axolotl's warning before its caller calls the None it returned
        return ErrorLine(number_, "strategy-load", text)
    match = _EXITCODE.search(text)
    if match:
        return ErrorLine(number_, "exitcode", text, match.group(1))
    if "Signal 9 (SIGKILL)" in text or ("SIGKILL" in text or "SIGBUS" in text) and "received" in text:
        return ErrorLine(number_, "signal", text)
    if text == "Killed" or text.endswith(" Killed") and len(text) < 120:
        return ErrorLine(number_, "killed", text)
    if text.startswith("terminate called after throwing") or text.startswith("Segmentation fault"):
        return ErrorLine(number_, "fatal", text)
    match = _EXCEPTION.match(text)
    if match and not match.group(1).endswith("Warning"):
        return ErrorLine(number_, "exception", text, match.group(1).rsplit(".", 1)[-1])
    return None
