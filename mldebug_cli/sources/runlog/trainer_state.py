"""HF Trainer's ``trainer_state.json`` (also written by TRL, axolotl, Unsloth and LLaMA-Factory v0).

``log_history`` holds train entries (``loss``, ``grad_norm``, ``learning_rate``), eval entries
(``eval_*``) and the final entry (``train_loss``, ``train_runtime``...). Python's json reads the bare
``NaN``/``Infinity`` tokens the Trainer writes. A folder is searched for the newest state: the
output folder's own file when its ``global_step`` is the highest, else the highest ``checkpoint-N``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.runlog.records import LogSink, as_step, numeric_items

FILE = "trainer_state.json"
_HISTORY = re.compile(r'"log_history"\s*:\s*\[')
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
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
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return as_step(state.get("global_step")) if isinstance(state, dict) else None


def read(path: Path, sink: LogSink) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the trainer state ({exc})") from None
    streamed = _stream_history(path, text, sink)
    state = _parse(path, text if streamed is None else text[:streamed[0]] + "[]" + text[streamed[1]:])
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise InputError(f"{path}: no log_history list (is this a trainer_state.json?)")
    for key in META_KEYS:
        if key in state:
            sink.meta[key] = state[key]
    if streamed is None:
        for index, entry in enumerate(state["log_history"]):
            _entry(entry, index, None, sink)


def _parse(path: Path, text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg}); a trainer_state.json "
                         "being rewritten? try again") from None
    except RecursionError:
        raise InputError(f"{path}: the JSON is nested too deeply to be a trainer_state.json") from None


def _stream_history(path: Path, text: str, sink: LogSink) -> tuple[int, int] | None:
    """Decode ``log_history`` entry by entry (a million-entry list never exists at once), with each entry's line.

    Returns the span of the list in ``text``, or None when there is no ``"log_history": [`` (then the
    whole document is parsed the ordinary way). A list that breaks off is the document's JSON error.
    """
    match = _HISTORY.search(text)
    if match is None:
        return None
    decoder = json.JSONDecoder()
    pos, line, counted = match.end(), 1 + text.count("\n", 0, match.end()), match.end()
    index = 0
    try:
        while True:
            pos = _skip(text, pos)
            if text.startswith("]", pos):
                break
            entry, end = decoder.raw_decode(text, pos)
            line += text.count("\n", counted, pos)
            counted = pos
            _entry(entry, index, line + (_step_offset(entry) if text.startswith("{\n", pos) else 0), sink)
            index += 1
            pos = _skip(text, end)
            if text.startswith(",", pos):
                pos += 1
            elif not text.startswith("]", pos):
                raise json.JSONDecodeError("expected ',' or ']' in log_history", text, pos)
    except (json.JSONDecodeError, RecursionError):
        _parse(path, text)  # raises the document's own error
        raise InputError(f"{path}: log_history could not be read entry by entry") from None
    return match.end() - 1, pos + 1


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


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
