"""JSON Lines metric logs: LLaMA-Factory's ``trainer_log.jsonl`` (``current_steps``, ``lr``, ``accuracy``),
LLaMA-Factory v1 and torchtune's JSONL (``step``). Read line by line; a bad line is a note, a cut last
line is a truncated record.
"""

from __future__ import annotations

import json
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.runlog.format import FileSet, Head, OneFile, RunLogFormat
from mldebug_cli.sources.runlog.records import AppendedLines, LogSink, LongLine, as_step, number

STEP_KEYS = ("current_steps", "step", "global_step", "iteration", "_step")
PROGRESS_KEYS = ("current_steps", "total_steps", "percentage", "step", "global_step", "iteration", "_step")
SKIPPED = frozenset(PROGRESS_KEYS)
MAX_BAD_LINES_NOTED = 5


def read(path: Path, sink: LogSink) -> None:
    reader = JsonlReader(path)
    reader.feed(sink, final=True)
    if reader.rows == 0:
        raise InputError(f"{path}: no JSON object lines (is this a trainer_log.jsonl?)")


class JsonlReader:
    """Reads a JSONL log from where the last read stopped (``--watch`` follows it as it grows).

    Each distinct set of keys is planned once (which key is the step, which are metrics), so a million
    lines cost a JSON parse and a few dictionary lookups each.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = AppendedLines(path)
        self.rows = self.bad = 0
        self.last_total = None
        self.plans: dict[tuple, tuple[str | None, tuple[str, ...]]] = {}

    def feed(self, sink: LogSink, final: bool = False) -> None:
        """Read the complete lines appended since the last call; a cut last line waits (or, if final, is noted)."""
        try:
            for first, lines in self.lines.batches():
                entries = _batch(lines)
                if entries is None:  # a blank or bad line in this chunk: line by line
                    for number_, line in enumerate(lines, first):
                        self._line(line, number_, sink)
                else:
                    for number_, entry in enumerate(entries, first):
                        self._row(entry, number_, sink)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the log ({exc})") from None
        if final:
            if self.lines.skipping:
                line = self.lines.line + 1
                sink.note("bad-record", f"the last line ({line}) is {LongLine.of(self.lines.skipping).reason()}; "
                          "ignored", line)
            tail = self.lines.tail.decode("utf-8", "replace")
            if tail.strip():  # a last line without its newline: whole if it parses, else cut off mid-write
                line = self.lines.line + 1
                if _entry(tail) is None:
                    sink.note("truncated", f"the last line ({line}) is cut off; ignored", line)
                else:
                    self.lines.line = line
                    self._line(tail, line, sink)
            if self.bad > MAX_BAD_LINES_NOTED:
                sink.note("bad-record", f"{self.bad} lines in all were not JSON objects and were skipped")

    def _line(self, line: str, number_: int, sink: LogSink) -> None:
        if isinstance(line, LongLine):
            sink.note("bad-record", f"line {number_} is {line.reason()}; skipped", number_)
            return
        entry = _entry(line)
        if entry is not None:
            self._row(entry, number_, sink)
        elif line.strip():
            self.bad += 1
            if self.bad <= MAX_BAD_LINES_NOTED:
                sink.note("bad-record", f"line {number_} is not a JSON object; skipped", number_)

    def _row(self, entry: dict, number_: int, sink: LogSink) -> None:
        signature = tuple(entry)
        plan = self.plans.get(signature)
        if plan is None:
            plan = self.plans[signature] = (next((k for k in STEP_KEYS if k in entry), None),
                                            tuple(k for k in signature if k not in SKIPPED and isinstance(k, str)))
        step_key, keys = plan
        step = as_step(entry[step_key]) if step_key else None
        total = entry.get("total_steps")
        if total is not None and total != self.last_total:
            self.last_total = total
            if as_step(total):
                sink.meta["max_steps"] = as_step(total)
        values = {}
        for key in keys:
            value = entry[key]
            if type(value) is not float:
                value = number(value)
                if value is None:
                    continue
            values[key] = value
        self.rows += 1
        if values:
            sink.add(step, values, number_)
            elapsed = entry.get("elapsed_time")
            if isinstance(elapsed, str):
                sink.time(step, _seconds(elapsed))


def _seconds(elapsed: str) -> float | None:
    """LLaMA-Factory's ``elapsed_time`` (``str(timedelta)``: "0:01:03", "1 day, 2:03:04") in seconds."""
    days, _, clock = elapsed.rpartition(", ")
    parts = clock.split(":")
    try:
        seconds = sum(float(p) * 60 ** i for i, p in enumerate(reversed(parts))) if len(parts) == 3 else None
        return None if seconds is None else seconds + (int(days.split()[0]) * 86400 if days else 0)
    except (ValueError, IndexError):
        return None


def _batch(lines: list[str]) -> list[dict] | None:
    """The lines of a chunk parsed as one JSON array (one C call instead of a call per line), when each line
    is exactly one JSON object; else None."""
    try:
        entries = json.loads("[" + ",".join(lines) + "]")
    except (ValueError, RecursionError):  # ValueError: also an integer over Python's digit limit
        return None
    if len(entries) != len(lines) or not all(type(e) is dict for e in entries):
        return None
    return entries


def _entry(line: str) -> dict | None:
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):  # ValueError: also an integer over Python's digit limit
        return None
    return entry if isinstance(entry, dict) else None


FOLDER_FILE = "trainer_log.jsonl"  # LLaMA-Factory's log in its output folder


def _in_folder(folder: Path) -> Path | None:
    return folder / FOLDER_FILE if (folder / FOLDER_FILE).is_file() else None


def _sniff(head: Head) -> bool:
    return head.path.name.endswith(".jsonl") or (head.stripped.startswith('{"') and "\n{" in head.stripped)


def _follow(path: Path, run_id: str | None, sink: LogSink) -> FileSet:
    return OneFile(path, JsonlReader)


FORMAT = RunLogFormat(read=read, in_folder=_in_folder, sniff=_sniff, follow=_follow)
