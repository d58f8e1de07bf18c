"""torchtune's metric log: ``DiskLogger`` writes ``log_<unix time>.txt`` (``StdoutLogger`` prints the same).

Each line is ``Step <n> | name:value name:value `` (``log_dict``) or ``Step <n> | name:value`` (``log``);
values are ``str(value)``, so tensors print as ``tensor(0.1234)``. Keys are the recipes' own: ``loss``
(that step's loss, not a window mean), ``lr``, ``grad_norm``, ``tokens_per_second_per_gpu``,
``peak_memory_*``, DPO's ``rewards/*`` and ``log_probs/*`` (TRL's ``logps/*``), ``val_loss``; the model
renames them. A folder is searched for its newest ``log_*.txt`` (torchtune's ``output_dir/logs/``).
"""

from __future__ import annotations

import re
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.runlog.format import FileSet, Head, OneFile, RunLogFormat
from mldebug_cli.sources.runlog.records import AppendedLines, LogSink, number

LINE = re.compile(r"^Step (\d+) \| (.*)$")
PAIR = re.compile(r"(\S+?):(\S+)")
LOG_NAME = re.compile(r"^log_(\d+)\.txt$")
MAX_BAD_LINES_NOTED = 5


def newest_log(folder: Path) -> Path | None:
    """The newest ``log_<unix time>.txt`` in ``folder`` or its ``logs/`` subfolder."""
    found = []
    for place in (folder, folder / "logs"):
        if place.is_dir():
            found += [(int(m.group(1)), p) for p in place.iterdir() if (m := LOG_NAME.match(p.name)) and p.is_file()]
    return max(found)[1] if found else None


def parse(line: str) -> tuple[int, dict[str, float]] | None:
    """(step, values) of one ``Step N | k:v ...`` line, or None when it is not one."""
    match = LINE.match(line.strip())
    if match is None:
        return None
    return int(match.group(1)), {k: v for k, raw in PAIR.findall(match.group(2)) if (v := number(raw)) is not None}


class LogReader:
    """Reads a DiskLogger file from where the last read stopped (``--watch`` follows it as it grows)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = AppendedLines(path)
        self.rows = 0
        self.bad = 0

    def feed(self, sink: LogSink, final: bool = False) -> None:
        """Read the complete lines appended since the last call; a cut last line waits (or, if final, is noted)."""
        try:
            for text in self.lines:
                self._line(text, sink)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the torchtune log ({exc})") from None
        if final and self.lines.tail.strip():
            line = self.lines.line + 1
            sink.note("truncated", f"the last line ({line}) is cut off; ignored", line)

    def _line(self, text: str, sink: LogSink) -> None:
        if not text.strip():
            return
        parsed = parse(text)
        if parsed is None:
            self.bad += 1
            if self.bad <= MAX_BAD_LINES_NOTED:
                sink.note("bad-record", f"line {self.lines.line} is not a 'Step N | key:value' line; skipped", self.lines.line)
            return
        step, values = parsed
        self.rows += 1
        if values:
            sink.add(step, values, self.lines.line)


def read(path: Path, sink: LogSink) -> None:
    if path.is_dir():
        found = newest_log(path)
        if found is None:
            raise InputError(f"{path}: no torchtune log_<time>.txt in this folder or its logs/")
        path = found
    reader = LogReader(path)
    reader.feed(sink, final=True)
    if reader.rows == 0:
        raise InputError(f"{path}: no 'Step N | key:value' lines (is this a torchtune DiskLogger log?)")
    if reader.bad > MAX_BAD_LINES_NOTED:
        sink.note("bad-record", f"{reader.bad} lines in all were not 'Step N | key:value' lines and were skipped")


_FIRST_LINE = re.compile(r"Step \d+ \| ")


def _sniff(head: Head) -> bool:
    return bool(_FIRST_LINE.match(head.stripped))


def _follow(path: Path, run_id: str | None, sink: LogSink) -> FileSet:
    return OneFile(path, LogReader, locate=newest_log)


FORMAT = RunLogFormat(read=read, in_folder=newest_log, sniff=_sniff, follow=_follow)
