"""HF Trainer's ``trainer_state.json`` (also written by TRL, axolotl, Unsloth and LLaMA-Factory v0).

``log_history`` holds train entries (``loss``, ``grad_norm``, ``learning_rate``), eval entries
(``eval_*``) and the final entry (``train_loss``, ``train_runtime``...). Python's json reads the bare
``NaN``/``Infinity`` tokens the Trainer writes. A folder is searched for the newest state: the
output folder's own file when its ``global_step`` is the highest, else the highest ``checkpoint-N``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import long_number_message, open_regular, read_text
from mldebug_cli.sources.runlog.format import Head, RunLogFormat
from mldebug_cli.sources.runlog.records import LogSink, as_step, numeric_items

FILE = "trainer_state.json"
_HISTORY = re.compile(r'"log_history"\s*:\s*\[')
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_GLOBAL_STEP = re.compile(r'"global_step"\s*:\s*(\d+)')
HEAD_CHARS = 1 << 16
CHUNK_CHARS = 1 << 20
META_KEYS = ("max_steps", "global_step", "logging_steps", "eval_steps", "save_steps", "train_batch_size",
             "num_train_epochs", "best_metric", "best_global_step")


def newest_state(folder: Path) -> Path | None:
    """The trainer_state.json in ``folder`` or its newest ``checkpoint-N/``, whichever is furthest on."""
    checkpoints = sorted(
        ((int(m.group(1)), p / FILE) for p in folder.iterdir()
         if (m := _CHECKPOINT.match(p.name)) and (p / FILE).is_file()),
        reverse=True,
    )
    own = folder / FILE
    if own.is_file() and (not checkpoints or (_global_step(own) or 0) >= checkpoints[0][0]):
        return own
    return checkpoints[0][1] if checkpoints else None


def _global_step(path: Path) -> int | None:
    """``global_step`` from the head of the file (``sort_keys`` puts it before ``log_history``), else the whole."""
    try:
        with open_regular(path, "r", encoding="utf-8-sig") as stream:
            head = stream.read(HEAD_CHARS)
    except (OSError, UnicodeDecodeError):
        return None
    found = _GLOBAL_STEP.search(head.split('"log_history"', 1)[0])
    if found:
        return int(found.group(1))
    try:
        state = json.loads(read_text(path))
    except (OSError, ValueError, RecursionError):
        return None
    return as_step(state.get("global_step")) if isinstance(state, dict) else None


def read(path: Path, sink: LogSink) -> None:
    try:
        with open_regular(path, "r", encoding="utf-8-sig") as stream:
            history = _History(path, stream, sink)
            outside = history.stream()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the trainer state ({exc})") from None
    state = _parse(path, outside)
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise InputError(f"{path}: no log_history list (is this a trainer_state.json?)")
    for key in META_KEYS:
        if key in state:
            sink.meta[key] = state[key]
    if not history.streamed:
        for index, entry in enumerate(state["log_history"]):
            _entry(entry, index, None, sink)


def _parse(path: Path, text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise _json_error(path, exc.lineno, exc.msg) from None
    except RecursionError:
        raise InputError(f"{path}: the JSON is nested too deeply to be a trainer_state.json") from None
    except ValueError as exc:  # an integer over Python's digit limit outside log_history
        raise InputError(f"{path}: {long_number_message(text, exc)}") from None


_LONG_NUMBER = re.compile(r"\d{" + str(sys.get_int_max_str_digits() + 1) + ",}")


def _json_error(path: Path, line: int, what: str) -> InputError:
    return InputError(f"{path}: not valid JSON at line {line} ({what}); a trainer_state.json being rewritten? "
                      "try again")


class _History:
    """Decodes ``log_history`` entry by entry from the file in chunks (neither the text nor the list of a
    million entries is ever held), with each entry's line.

    ``stream()`` returns the document with the list emptied (``[]``), for the ordinary parse of the rest;
    with no ``"log_history": [`` in the file it returns the whole text and ``streamed`` stays False.
    """

    def __init__(self, path: Path, stream, sink: LogSink) -> None:
        self.path, self.file, self.sink = path, stream, sink
        self.buffer, self.eof = "", False
        self.lines_before = 0  # newlines before buffer position ``counted``
        self.counted = 0
        self.streamed = False

    def _more(self) -> bool:
        chunk = self.file.read(CHUNK_CHARS)
        self.eof = not chunk
        self.buffer += chunk
        return bool(chunk)

    def stream(self) -> str:
        match = None
        while match is None and self._more():
            match = _HISTORY.search(self.buffer)
        if match is None:
            return self.buffer
        self.streamed = True
        head = self.buffer[:match.end() - 1]
        self.lines_before = head.count("\n")
        self.buffer = self.buffer[match.end():]
        pos = self._entries()
        return head + "[]" + self.buffer[pos + 1:] + self.file.read()

    def _entries(self) -> int:
        """Feeds each entry to the sink; the buffer position of the closing ``]``."""
        decoder = json.JSONDecoder()
        pos, index = 0, 0
        while True:
            pos = self._skip(pos)
            if self.buffer.startswith("]", pos):
                return pos
            try:
                entry, end = decoder.raw_decode(self.buffer, pos)
            except json.JSONDecodeError as exc:
                if self._refill(pos):
                    pos = 0
                    continue
                raise _json_error(self.path, self._line_at(exc.pos), exc.msg) from None
            except RecursionError:
                raise InputError(f"{self.path}: log_history could not be read entry by entry") from None
            except ValueError:  # an integer over Python's digit limit: that number becomes null, with a note
                if self._drop_long_number(pos):
                    continue
                raise _json_error(self.path, self._line_at(pos), "a number too long to read") from None
            line = self._line_at(pos)
            _entry(entry, index, line + (_step_offset(entry) if self.buffer.startswith("{\n", pos) else 0), self.sink)
            index += 1
            pos = self._skip(end)
            if self.buffer.startswith(",", pos):
                pos += 1
            elif not self.buffer.startswith("]", pos):
                raise _json_error(self.path, self._line_at(pos), "expected ',' or ']' in log_history")
            if pos > CHUNK_CHARS:  # drop what was read, so the buffer stays about one chunk
                self._drop(pos)
                pos = 0

    def _drop_long_number(self, pos: int) -> bool:
        """Replace the first integer too long for Python after ``pos`` by ``null`` (its entry keeps its other
        values) and note it at its line; False when there is none."""
        found = _LONG_NUMBER.search(self.buffer, pos)
        while found is not None and found.end() == len(self.buffer) and not self.eof:  # the number may go on
            self._more()
            found = _LONG_NUMBER.search(self.buffer, pos)
        if found is None:
            return False
        line = self.lines_before + 1 + self.buffer.count("\n", self.counted, found.start())  # _line_at moves on
        self.sink.note("bad-record", f"{self.path.name}: line {line}: a number of {found.end() - found.start():,} "
                       "digits, more than mldebug reads; read as missing", line)
        self.buffer = self.buffer[:found.start()] + "null" + self.buffer[found.end():]
        return True

    def _line_at(self, pos: int) -> int:
        """The 1-based line of buffer position ``pos`` (positions only move forward between drops)."""
        self.lines_before += self.buffer.count("\n", self.counted, pos)
        self.counted = pos
        return self.lines_before + 1

    def _drop(self, pos: int) -> None:
        self._line_at(pos)
        self.buffer = self.buffer[pos:]
        self.counted = 0

    def _refill(self, pos: int) -> bool:
        """Drops the buffer before ``pos`` and reads one more chunk; False at the end of the file."""
        self._drop(pos)
        return self._more()

    def _skip(self, pos: int) -> int:
        while True:
            while pos < len(self.buffer) and self.buffer[pos] in " \t\r\n":
                pos += 1
            if pos < len(self.buffer) or not self._refill(pos):
                return pos if pos < len(self.buffer) else 0
            pos = 0


def _step_offset(entry) -> int:
    """Lines from an entry's ``{`` to its ``"step"`` key under ``indent=2, sort_keys`` (the Trainer's layout)."""
    if not isinstance(entry, dict) or "step" not in entry:
        return 0
    return 1 + sorted(entry).index("step")


def read_history(history: list, meta: dict, sink: LogSink) -> None:
    """A ``log_history`` already in memory (a TrainerCallback's ``state.log_history``)."""
    sink.meta.update({k: v for k, v in meta.items() if k in META_KEYS})
    for index, entry in enumerate(history):
        _entry(entry, index, None, sink)


def _entry(entry, index: int, line: int | None, sink: LogSink) -> None:
    if not isinstance(entry, dict):
        sink.note("bad-record", f"log_history[{index}] is not an object; skipped", line)
        return
    step = as_step(entry.get("step"))
    if step is None:
        sink.note("no-step", f"log_history[{index}] has no step; skipped", line)
        return
    values = numeric_items(entry)
    values.pop("step", None)
    sink.add(step, values, line)


def _sniff(head: Head) -> bool:
    return head.stripped.startswith("{") and ("log_history" in head.text or head.path.name.endswith(".json"))


def _resolve(path: Path) -> Path:
    """A folder given with ``--format trainer-state``: its newest trainer_state.json."""
    if not path.is_dir():
        return path
    found = newest_state(path)
    if found is None:
        raise InputError(f"{path}: no trainer_state.json here or in a checkpoint-*/ folder")
    return found


FORMAT = RunLogFormat(read=read, in_folder=newest_state, sniff=_sniff, resolve=_resolve)
