"""Console output of a training job: the dicts HF Trainer/TRL print (``{'loss': 1.23, ...}``; under
transformers 5 the values are ``.4g`` strings), and torchtune's ``Step N | key:value`` lines.

Console dicts carry no step: the step is the training progress bar's count printed just before
the dict (tqdm's ``5/200 [``), else the dict's position (a note says so).
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import open_regular
from mldebug_cli.sources.runlog.crash import CrashScan
from mldebug_cli.sources.runlog.format import FileSet, Head, OneFile, RunLogFormat
from mldebug_cli.sources.runlog.records import AppendedLines, LogSink, numeric_items
from mldebug_cli.sources.runlog.torchtune import parse as torchtune_line

_DICT = re.compile(r"\{'[^{}\n]*\}")
_PROGRESS = re.compile(r"(\d+)/(\d+) \[")
_KEY = re.compile(r"'([^'\n]*)': ")
_METRIC_HINTS = frozenset({"loss", "eval_loss", "reward", "grad_norm", "learning_rate", "train_runtime"})
_FINAL_KEYS = frozenset({"train_runtime", "train_loss"})


def read(path: Path, sink: LogSink) -> None:
    scan = _Steps()
    crashed = CrashScan()

    def first_pass(line: str, number_: int) -> None:
        _line(line, number_, None, scan)
        crashed.feed(line, number_)

    _each_line(path, first_pass)
    _keep_crash(crashed, scan, sink)
    if scan.dicts == 0:
        if crashed.errors:  # a run that died before its first log (or a captured stderr): the crash is the reading
            return
        raise InputError(f"{path}: no metric dicts ({{'loss': ...}}) or 'Step N | ...' lines found")
    steps = _Steps(use_bars=scan.bars_ok)
    train_dicts = scan.dicts - scan.eval_dicts
    if not scan.bars_ok and scan.total and train_dicts and scan.total % train_dicts == 0:
        steps.interval = scan.total // train_dicts
    _each_line(path, lambda line, number_: _line(line, number_, sink, steps))
    if not scan.bars_ok and not steps.torchtune:
        sink.note("no-step", f"the progress bar does not count the {scan.dicts} logged dicts (buffered output, or "
                  f"no bar): steps are their position in the log times {steps.interval}"
                  + (f" ({scan.total} steps / {train_dicts} train logs)" if steps.interval > 1 else ""))
    if scan.total:
        sink.meta.setdefault("max_steps", scan.total)


class _Steps:
    """Where a dict's step comes from: the training bar printed since the previous dict, else its position.

    The bar is used only if every train dict had a fresh bar count above the previous one (a first pass
    over the file decides); eval dicts take the last train step.
    """

    def __init__(self, use_bars: bool = False) -> None:
        self.use_bars = use_bars
        self.dicts = 0
        self.step = 0
        self.bar: int | None = None
        self.last_bar = 0
        self.eval_dicts = 0
        self.totals: Counter[int] = Counter()
        self.interval = 1
        self.bars_ok = True
        self.torchtune = False
        self.kinds: dict[tuple, str] = {}  # a dict's keys -> what kind of dict it is
        self.lines = 0  # lines read
        self.last_metric_line = 0  # the line of the last metric record (train or eval dict, torchtune line)

    def progress(self, text: str) -> None:
        for count, total in _PROGRESS.findall(text):
            self.bar = int(count)
            self.totals[int(total)] += 1

    @property
    def total(self) -> int:
        """The training bar's total: the most printed one (dataset-map and eval bars print less)."""
        return self.totals.most_common(1)[0][0] if self.totals else 0

    def next(self, evaluation: bool) -> int:
        self.dicts += 1
        if evaluation and self.dicts > 1:
            self.eval_dicts += 1
            self.bar = None
            return self.step
        bar = self.bar if self.bar is not None and self.bar > self.last_bar else None  # a fresh bar count
        if bar is not None:
            self.last_bar = bar
        else:
            self.bars_ok = False
        if not self.use_bars:
            self.step += self.interval
        elif bar is not None:
            self.step = bar
        self.bar = None
        return self.step


def _keep_crash(crashed: CrashScan, scan: _Steps, sink: LogSink) -> None:
    """The error lines and the line of the last metric record, for RN040/RN041 (the run's meta)."""
    sink.meta["console_lines"] = scan.lines
    if scan.last_metric_line:
        sink.meta["last_metric_line"] = scan.last_metric_line
    if crashed.errors:
        sink.meta["errors"] = crashed.errors
        sink.meta["errors_seen"] = crashed.seen
    stalled = crashed.stalled(scan.last_metric_line, scan.dicts)
    if stalled is not None:
        sink.meta["stalled_line"], sink.meta["stalled_seconds"], sink.meta["seconds_per_point"] = stalled


def _each_line(path: Path, handle) -> None:
    try:
        with open_regular(path, "r", encoding="utf-8", errors="replace") as stream:
            for number_, line in enumerate(stream, 1):
                handle(line, number_)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the log ({exc})") from None


def _line(line: str, number_: int, sink: LogSink | None, steps: _Steps) -> None:
    steps.lines = number_
    torchtune = torchtune_line(line) if line.startswith("Step ") else None
    if torchtune is not None:
        step, values = torchtune
        if values:
            steps.dicts += 1
            steps.last_metric_line = number_
            steps.torchtune = True
            if sink is not None:
                sink.add(step, values, number_)
        return
    if "{'" not in line:
        steps.progress(line)
        return
    position = 0
    for match in _DICT.finditer(line):
        steps.progress(line[position:match.start()])
        position = match.end()
        if sink is None:  # the first pass only needs the keys: what kind of dict this is
            keys, values = tuple(_KEY.findall(match.group(0))), {}
        else:
            entry = _literal(match.group(0))
            if entry is None:
                continue
            values = numeric_items(entry)
            keys = tuple(values)
        kind = steps.kinds.get(keys)
        if kind is None:
            kind = steps.kinds[keys] = _kind(keys)
        if kind == "final":
            steps.last_metric_line = number_  # the run's summary: it finished training
            if sink is not None:
                sink.meta.update({k: v for k, v in values.items() if k.startswith("train_")})
        elif kind != "other":
            steps.last_metric_line = number_
            step = steps.next(evaluation=kind == "eval")
            if sink is not None:
                sink.add(step, values, number_)
    steps.progress(line[position:])


def _kind(keys: tuple) -> str:
    """other (no metric), final (the run's summary), eval or train: from a dict's keys."""
    if _METRIC_HINTS.isdisjoint(keys):
        return "other"
    if not _FINAL_KEYS.isdisjoint(keys) and "loss" not in keys:
        return "final"
    return "eval" if all(k.startswith("eval_") or k == "epoch" for k in keys) else "train"


def _literal(text: str) -> dict | None:
    try:  # the common case, ten times faster than literal_eval: plain keys and numbers or number strings
        value = json.loads(text.replace("'", '"'))
        if isinstance(value, dict):
            return value
    except ValueError:
        pass
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _with_bare_specials(text)
    return value if isinstance(value, dict) else None


def _with_bare_specials(text: str) -> dict | None:
    """4.x prints float NaN/inf as bare ``nan``/``inf``, which literal_eval refuses: quote them (``number`` reads them)."""
    fixed = re.sub(r"(?<=: )(-?(?:nan|inf))(?=[,}])", r"'\1'", text)
    if fixed == text:
        return None
    try:
        value = ast.literal_eval(fixed)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class ConsoleFollower:
    """``--watch`` on a console log: the lines appended since the last read, as long as the training
    bar gives every dict its step. Without a fresh bar count the steps depend on the whole file (its
    dict count and bar total), so ``feed`` then says the log must be read whole."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = AppendedLines(path)
        self.steps = _Steps(use_bars=True)

    def feed(self, sink: LogSink) -> bool:
        try:
            for text in self.lines:
                _line(text, self.lines.line, sink, self.steps)
                if not self.steps.bars_ok:
                    return False
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the log ({exc})") from None
        if self.steps.total:
            sink.meta["max_steps"] = self.steps.total
        return True


def _sniff(head: Head) -> bool:
    """Any text: the console is what a log in no other format is, unless it is binary."""
    return not _looks_binary(head.raw, head.text)


def _looks_binary(head: bytes, text: str) -> bool:
    """More than a few NUL bytes, or a tenth of the text undecodable or control bytes (a console capture may hold
    a stray NUL: torch's DataLoader worker writes one after its bus-error message)."""
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r\x1b"))
    return head.count(b"\x00") > max(8, len(head) // 100) or odd > max(8, len(text) // 10)


def _follow(path: Path, run_id: str | None, sink: LogSink) -> FileSet:
    return OneFile(path, ConsoleFollower)


FORMAT = RunLogFormat(read=read, sniff=_sniff, follow=_follow)
