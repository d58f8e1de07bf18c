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
_STEP_LINE = re.compile(r'^\s*"step": (-?\d+),?\s*$')
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
    if own.is_file():
        if not checkpoints or (_global_step(own) or 0) >= checkpoints[0][0]:
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
    try:
        state = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON at line {exc.lineno} ({exc.msg}); a trainer_state.json "
                         "being rewritten? try again") from None
    except RecursionError:
        raise InputError(f"{path}: the JSON is nested too deeply to be a trainer_state.json") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{path}: no log_history list (is this a trainer_state.json?)")
    for key in META_KEYS:
        if key in state:
            sink.meta[key] = state[key]
    lines = _entry_lines(text, len(history))
    for index, entry in enumerate(history):
        if not isinstance(entry, dict):
            sink.note("bad-record", f"log_history[{index}] is not an object; skipped")
            continue
        step = as_step(entry.get("step"))
        if step is None:
            sink.note("no-step", f"log_history[{index}] has no step; skipped")
            continue
        values = numeric_items(entry)
        values.pop("step", None)
        sink.add(step, values, lines[index] if lines else None)


def _entry_lines(text: str, entries: int) -> list[int] | None:
    """The line of each entry's ``"step"`` key (sort_keys puts it in every entry once), when they line up."""
    found = [number for number, line in enumerate(text.splitlines(), 1) if _STEP_LINE.match(line)]
    return found if len(found) == entries else None
