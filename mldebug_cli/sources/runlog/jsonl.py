"""JSON Lines metric logs: LLaMA-Factory's ``trainer_log.jsonl`` (``current_steps``, ``lr``, ``accuracy``),
LLaMA-Factory v1 and torchtune's JSONL (``step``). Read line by line; a bad line is a note, a cut last
line is a truncated record.
"""

from __future__ import annotations

import json
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.runlog.records import LogSink, as_step, numeric_items

STEP_KEYS = ("current_steps", "step", "global_step", "iteration", "_step")
PROGRESS_KEYS = ("current_steps", "total_steps", "percentage", "step", "global_step", "iteration", "_step")
SKIPPED = frozenset(PROGRESS_KEYS)
MAX_BAD_LINES_NOTED = 5


def read(path: Path, sink: LogSink) -> None:
    bad = 0
    rows = 0
    last_bad: tuple[int, str] | None = None
    last_total = None
    try:
        with path.open("r", encoding="utf-8", errors="replace") as stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                entry = _entry(line)
                if entry is None:
                    bad += 1
                    last_bad = (number, line)
                    if bad <= MAX_BAD_LINES_NOTED:
                        sink.note("bad-record", f"line {number} is not a JSON object; skipped", number)
                    continue
                step_key = next((k for k in STEP_KEYS if k in entry), None)
                step = as_step(entry[step_key]) if step_key else None
                total = entry.get("total_steps")
                if total is not None and total != last_total:
                    last_total = total
                    if as_step(total):
                        sink.meta["max_steps"] = as_step(total)
                values = {k: v for k, v in numeric_items(entry).items() if k not in SKIPPED}
                rows += 1
                if values:
                    sink.add(step, values, number)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the log ({exc})") from None
    if rows == 0:
        raise InputError(f"{path}: no JSON object lines (is this a trainer_log.jsonl?)")
    if last_bad is not None and last_bad[0] == number and not last_bad[1].endswith("\n"):
        sink.notes[:] = [n for n in sink.notes if n.line != last_bad[0]]
        sink.note("truncated", f"the last line ({last_bad[0]}) is cut off; ignored", last_bad[0])
        bad -= 1
    if bad > MAX_BAD_LINES_NOTED:
        sink.note("bad-record", f"{bad} lines in all were not JSON objects and were skipped")


def _entry(line: str) -> dict | None:
    try:
        entry = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None
