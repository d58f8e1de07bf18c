"""W&B history as CSV: the UI's panel export (``Step``, ``"<run> - <metric>"``, ``__MIN``/``__MAX``
columns) or ``run.history().to_csv()`` (``_step``, ``train/loss``...). Panel exports may be down-sampled.
"""

from __future__ import annotations

import csv
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import open_regular
from mldebug_cli.sources.runlog.format import Head, RunLogFormat
from mldebug_cli.sources.runlog.records import LogSink, as_step, number

MAX_METRIC_COLUMNS = 10_000  # a W&B export has tens; more is not a training log, and each row would cost them all
STEP_COLUMNS = ("train/global_step", "Step", "step", "global_step", "_step")


def read(path: Path, sink: LogSink) -> None:
    try:
        with open_regular(path, "r", encoding="utf-8-sig", errors="replace", newline="") as stream:
            reader = csv.reader(stream)
            header = next(reader, None)
            if not header:
                raise InputError(f"{path}: empty CSV file")
            step_index, columns = _columns(path, header, sink)
            for number_, row in enumerate(reader, 2):
                if step_index >= len(row):
                    continue
                step = as_step(row[step_index])
                if step is None:
                    continue
                if header[step_index] == "_step":
                    step += 1
                values = {name: v for index, name in columns
                          if index < len(row) and row[index] != "" and (v := number(row[index])) is not None}
                if values:
                    sink.add(step, values, number_)
    except (OSError, csv.Error) as exc:
        raise InputError(f"{path}: cannot read the CSV ({exc})") from None


def _columns(path: Path, header: list[str], sink: LogSink) -> tuple[int, list[tuple[int, str]]]:
    step_index = next((header.index(c) for c in STEP_COLUMNS if c in header), None)
    if step_index is None:
        raise InputError(f"{path}: no step column (one of {', '.join(STEP_COLUMNS)}) in the CSV header")
    runs: dict[str, None] = {}  # in order of first column
    columns: list[tuple[int, str]] = []
    for index, name in enumerate(header):
        if index == step_index or name.endswith(("__MIN", "__MAX")) or name.startswith("_"):
            continue
        run, sep, metric = name.rpartition(" - ")
        if sep:
            runs.setdefault(run)
            if run != next(iter(runs)):
                continue
            name = metric
        columns.append((index, name))
    if len(columns) > MAX_METRIC_COLUMNS:
        sink.note("bad-record", f"the CSV has {len(columns):,} metric columns; the first {MAX_METRIC_COLUMNS:,} "
                  "were read (mldebug's limit)")
        columns = columns[:MAX_METRIC_COLUMNS]
    names = list(runs)
    if len(names) > 1:
        sink.note("bad-record", f"the CSV holds {len(names)} runs; only the first ({names[0]!r}) was read")
    if names:
        sink.note("sampled", "a W&B panel export may be down-sampled: single-step spikes can be missing")
    return step_index, columns


def _sniff(head: Head) -> bool:
    return head.path.suffix.lower() == ".csv"


FORMAT = RunLogFormat(read=read, sniff=_sniff)
