"""What every run-log reader produces: rows of ``{key: value}`` at a step, notes on oddities, run metadata.

Readers stream rows into a :class:`LogSink` so a log of a million steps never sits in memory as
Python objects; :mod:`mldebug_cli.sources.runlog.model` turns the rows into per-metric series.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from mldebug_cli.core.safe_io import open_regular

_TENSOR = re.compile(r"^tensor\((.*?)(?:,.*)?\)$")


@dataclass(frozen=True)
class Note:
    """An oddity a reader met and repaired (RN012 reports them): what it was, where, what was done."""

    kind: str  # truncated | bad-record | restart | interleaved | duplicate | no-step | sampled
    message: str
    line: int | None = None


class RowSink(Protocol):
    def add(self, step: int | None, values: dict[str, float], line: int | None = None) -> None: ...


@dataclass
class LogSink:
    """Where a reader puts what it reads; ``rows`` is any callable taking (step, values, line)."""

    rows: RowSink
    notes: list[Note] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    times: dict[int, float] = field(default_factory=dict)  # step -> when it was first logged (seconds since the epoch)

    def __post_init__(self) -> None:
        self.add = self.rows.add  # one call per row, not two: a million rows is a million calls
        # (key, step, value) of a metric logged on its own, as MLflow stores them
        self.add_point = getattr(self.rows, "add_point", None) or (lambda key, step, value: self.rows.add(step, {key: value}))

    def note(self, kind: str, message: str, line: int | None = None) -> None:
        self.notes.append(Note(kind, message, line))

    def time(self, step: int | None, seconds: float | None) -> None:
        """The wall-clock time a step's values were logged (the first time seen for the step is kept)."""
        if step is not None and seconds is not None and math.isfinite(seconds):
            self.times.setdefault(step, seconds)


def number(value: Any) -> float | None:
    """A logged value as a float: numbers, v5's ``.4g`` strings, ``"NaN"``, torchtune's ``tensor(0.12)``."""
    kind = type(value)
    if kind is float:
        return value
    if kind is str:
        try:  # the common case first: v5's ".4g" strings, "nan"
            return float(value)
        except ValueError:
            pass
        text = value.strip()
        match = _TENSOR.match(text)
        if match:
            text = match.group(1)
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # a Python int beyond float range
            return math.inf if value > 0 else -math.inf  # copysign would convert the int too
    return None


def numeric_items(entry: dict[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in entry.items():
        if type(value) is float:  # the common case first: a million rows
            out[key] = value
            continue
        parsed = number(value)
        if parsed is not None and isinstance(key, str):
            out[key] = parsed
    return out


def as_step(value: Any) -> int | None:
    if type(value) is int and -2**62 <= value <= 2**62:
        return value
    parsed = number(value)
    if parsed is None or not math.isfinite(parsed) or abs(parsed) > 2**62:
        return None
    return int(parsed)


MAX_LINE_BYTES = 8 * 2**20  # a log line longer than this is no metric record: stepped over, never held whole


class LongLine(str):
    """Stands in for a line over ``MAX_LINE_BYTES`` (its size in ``size``): readers note it at its line."""

    size: int = 0

    @classmethod
    def of(cls, size: int) -> LongLine:
        line = cls("")
        line.size = size
        return line

    def reason(self) -> str:
        return f"{self.size:,} bytes long, over the {MAX_LINE_BYTES // 2**20} MiB mldebug reads per log line"


class AppendedLines:
    """The complete lines of a text file from where the last read stopped, read in chunks.

    ``--watch`` keeps one per growing file (JSONL, torchtune and console logs, MLflow metric files) and
    parses only what was appended; a last line without its newline waits for the next read (``tail``
    says whether one is waiting). ``line`` is the 1-based number of the last line handed out. A line over
    ``MAX_LINE_BYTES`` (a 300 MB line, a file with no newline at all) is stepped over chunk by chunk and handed out
    as a ``LongLine``; ``skipping`` says the file ends inside one.
    """

    CHUNK = 1 << 18

    def __init__(self, path) -> None:
        self.path = path
        self.offset = 0
        self.line = 0
        self.tail = b""
        self.skipping = 0  # bytes of an over-long line stepped over so far (0: not inside one)

    def __iter__(self):
        for first, lines in self.batches():
            for number_, line in enumerate(lines, first):
                self.line = number_
                yield line

    def batches(self):
        """(number of the first line, the lines) of each chunk's complete lines; ``line`` ends at the last."""
        with open_regular(self.path) as stream:
            stream.seek(self.offset)
            pending = b""
            while chunk := stream.read(self.CHUNK):
                if self.skipping:
                    chunk = yield from self._step_over(chunk)
                pending += chunk
                end = pending.rfind(b"\n") + 1
                if not end:
                    if len(pending) > MAX_LINE_BYTES:
                        self.offset += len(pending)
                        self.skipping, pending = len(pending), b""
                    continue
                complete, pending = pending[:end], pending[end:]
                self.offset += end
                if complete.isspace():  # a run of blank lines (200 MB of them): counted in C, nothing to parse
                    self.line += complete.count(b"\n")
                    continue
                lines = [raw.decode("utf-8", "replace") for raw in complete.splitlines()]
                first = self.line + 1
                self.line += len(lines)
                yield first, lines
            self.tail = pending

    def _step_over(self, chunk: bytes):
        """The rest of ``chunk`` after the over-long line it continues (handed out once its newline comes)."""
        end = chunk.find(b"\n") + 1
        self.offset += end or len(chunk)
        if not end:
            self.skipping += len(chunk)
            return b""
        size, self.skipping = self.skipping + end - 1, 0
        self.line += 1
        yield self.line, [LongLine.of(size)]
        return chunk[end:]
