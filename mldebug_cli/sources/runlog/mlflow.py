"""MLflow tracking stores, read with the standard library: the file store (``mlruns/``) and ``mlflow.db``.

File store: ``mlruns/<experiment>/<run>/metrics/<key>`` (a key with ``/`` is nested folders), one line
per point, ``"<timestamp_ms> <value> <step>"`` (2 fields before steps existed, 5 with a dataset name and
digest); ``meta.yaml`` holds the run's name, status and start time. The run given may be ``mlruns/``, an
experiment folder or a run folder. SQLite store (MLflow 3's default ``sqlite:///mlflow.db``): the
``metrics`` table (``key, value, timestamp, run_uuid, step, is_nan``; NaN is stored as 0 with
``is_nan``, ±Inf as ±float max) and the ``runs`` table. Several runs: the newest is read and a note
names the others, unless ``run_id`` picks one. HF's MLflowCallback logs the Trainer's raw keys.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import inside, open_regular, read_text
from mldebug_cli.sources.runlog.format import FileSet, FollowedFile, Head, RunLogFormat
from mldebug_cli.sources.runlog.model import SUMMARY_KEYS
from mldebug_cli.sources.runlog.records import AppendedLines, LogSink, as_step

SQLITE_MAGIC = b"SQLite format 3\x00"
DB_NAME = "mlflow.db"
FLOAT_MAX = sys.float_info.max
MAX_BAD_LINES_NOTED = 5
META_PARAMS = ("max_steps", "logging_steps", "eval_steps")  # HF TrainingArguments logged as params
LOCK_TIMEOUT = 1.0  # seconds to wait for a writer's lock before saying the database is locked


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    name: str
    start_time: int
    status: str
    where: Path | None = None  # the run folder (file store)


def is_store(folder: Path) -> bool:
    """Whether ``folder`` is an MLflow store, experiment or run folder, or holds ``mlflow.db``/``mlruns/``."""
    return (folder / DB_NAME).is_file() or bool(file_store_runs(folder)) or (
        (folder / "mlruns").is_dir() and bool(file_store_runs(folder / "mlruns")))


def store_path(folder: Path) -> Path:
    """What to read in a folder: its run folders if it has them, else its ``mlruns/``, else its ``mlflow.db``."""
    if file_store_runs(folder):
        return folder
    if (folder / "mlruns").is_dir() and file_store_runs(folder / "mlruns"):
        return folder / "mlruns"
    return folder / DB_NAME


def read(path: Path, sink: LogSink, run_id: str | None = None) -> None:
    if path.is_dir():
        path = store_path(path)
    if path.is_dir():
        _read_file_store(path, sink, run_id)
    else:
        _read_database(path, sink, run_id)


# --- file store ---------------------------------------------------------------------------------------------------

def file_store_runs(folder: Path) -> list[RunInfo]:
    """The active runs under a run, experiment or ``mlruns/`` folder (up to two levels down)."""
    if _is_run_folder(folder):
        return [_run_info(folder)]
    found = []
    try:
        for child in sorted(folder.iterdir()):
            if child.name.startswith(".") or not child.is_dir():
                continue
            if _is_run_folder(child):
                found.append(_run_info(child))
            elif (child / "meta.yaml").is_file():
                found += [_run_info(run) for run in sorted(child.iterdir()) if _is_run_folder(run)]
    except OSError:
        return []
    return [run for run in found if run.status != "deleted"]


def run_of_metric_file(path: Path) -> Path | None:
    """The run folder of a file under ``<run>/metrics/`` (a metric named with ``/`` is nested), else None."""
    for parent in path.parents:
        if parent.name == "metrics" and _is_run_folder(parent.parent):
            return parent.parent
    return None


def _is_run_folder(folder: Path) -> bool:
    return (folder / "meta.yaml").is_file() and (folder / "metrics").is_dir()


def _run_info(folder: Path) -> RunInfo:
    meta = _meta(folder / "meta.yaml")
    start = meta.get("start_time", "")
    stage = meta.get("lifecycle_stage", "active")
    return RunInfo(run_id=meta.get("run_id") or folder.name, name=meta.get("run_name", ""),
                   start_time=int(start) if start.isdigit() else 0,
                   status="deleted" if stage == "deleted" else _STATUS.get(meta.get("status", ""), "unknown"),
                   where=folder)


_STATUS = {"1": "running", "2": "scheduled", "3": "finished", "4": "failed", "5": "killed"}


def _meta(path: Path) -> dict[str, str]:
    """The flat ``key: value`` lines of an MLflow ``meta.yaml`` (quotes stripped; nested values ignored)."""
    values: dict[str, str] = {}
    try:
        text = read_text(path, errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith((" ", "-")):
            values[key.strip()] = value.strip().strip("'\"")
    return values


def _read_file_store(folder: Path, sink: LogSink, run_id: str | None) -> None:
    where = run_folder(folder, run_id, sink)
    files = metric_files(where)
    if not files:
        raise InputError(f"{where}: the MLflow run has no metric files")
    for file, key in files:
        MetricFile(file, key).feed(sink, final=True)


def run_folder(folder: Path, run_id: str | None, sink: LogSink) -> Path:
    """The folder of the run to read (the chosen or the newest one), its step counts put in the metadata."""
    run = choose(file_store_runs(store_path(folder)), run_id, folder, sink)
    assert run.where is not None
    params = {}
    for key in META_PARAMS:
        try:
            params[key] = read_text((run.where / "params" / key), errors="replace")
        except OSError:
            continue
    _params_meta(params, sink)
    return run.where


def metric_files(run: Path) -> list[tuple[Path, str]]:
    """(file, metric key) of each metric file of a run folder; a key with ``/`` is nested folders."""
    metrics = run / "metrics"
    return [(p, p.relative_to(metrics).as_posix()) for p in inside(run, sorted(metrics.rglob("*"))) if p.is_file()]


def _params_meta(params: dict[str, str], sink: LogSink) -> None:
    """The Trainer's step counts from the run's params (``max_steps`` -1 means "by epochs": left out)."""
    for key, text in params.items():
        try:
            value = float(text)
        except (TypeError, ValueError):
            continue
        if value > 0:
            sink.meta[key] = int(value) if value.is_integer() else value


class MetricFile:
    """One metric's file, read from where the last read stopped (``--watch`` follows a growing file)."""

    def __init__(self, path: Path, key: str) -> None:
        self.path, self.key = path, key
        self.lines = AppendedLines(path)
        self.bad = 0

    def feed(self, sink: LogSink, final: bool = False) -> None:
        """Read the complete lines appended since the last call; a cut last line waits (or, if final, is noted)."""
        try:
            for text in self.lines:
                self._point(text, sink)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the metric file ({exc})") from None
        if final and self.lines.tail.strip():
            sink.note("truncated", f"{self.path}: the last line ({self.lines.line + 1}) is cut off; ignored")

    def _point(self, text: str, sink: LogSink) -> None:
        parts = text.split()
        if not parts:
            return
        try:
            if len(parts) not in (2, 3, 5):
                raise ValueError
            value = float(parts[1])
            step = as_step(parts[2]) if len(parts) >= 3 else 0
            stamp = int(parts[0])
            if step is None:  # Inf, NaN, or beyond any run's length
                raise ValueError
        except ValueError:
            self.bad += 1
            if self.bad <= MAX_BAD_LINES_NOTED:
                sink.note("bad-record", f"{self.path}: line {self.lines.line} is not '<timestamp> <value> <step>'; skipped")
            return
        _add(sink, self.key, step, value)
        sink.time(step, stamp / 1000)  # MLflow stamps each point in milliseconds


def _add(sink: LogSink, key: str, step: int, value: float) -> None:
    if key in SUMMARY_KEYS:
        sink.meta[key] = value
    else:
        sink.add_point(key, step, value)


def choose(runs: list[RunInfo], run_id: str | None, where: Path, sink: LogSink) -> RunInfo:
    """The run named by ``run_id`` (an id or a unique prefix, or a run name), else the newest, with a note."""
    if not runs:
        raise InputError(f"{where}: no MLflow run in this store")
    if run_id is not None:
        picked = [r for r in runs if r.run_id.startswith(run_id) or r.name == run_id]
        if len(picked) != 1:
            listing = ", ".join(f"{r.run_id[:8]} ({r.name})" for r in runs[:5])
            raise InputError(f"{where}: {'no' if not picked else 'more than one'} MLflow run matches --run-id "
                             f"{run_id!r}", hint=f"runs here: {listing}")
        run = picked[0]
    else:
        run = max(runs, key=lambda r: r.start_time)
        if len(runs) > 1:
            sink.note("several-runs", f"{len(runs)} MLflow runs here; read the newest, {run.run_id} ({run.name}); "
                      "pass --run-id to choose another")
    sink.meta.update({"mlflow_run_id": run.run_id, "mlflow_run_name": run.name, "mlflow_status": run.status})
    return run


# --- SQLite store -------------------------------------------------------------------------------------------------

def _read_database(path: Path, sink: LogSink, run_id: str | None) -> None:
    if not path.is_file():
        raise InputError(f"{path}: no such MLflow database")
    try:
        with open_regular(path) as stream:
            if stream.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                raise InputError(f"{path}: not an SQLite database (an MLflow store is mlruns/ or mlflow.db)")
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=LOCK_TIMEOUT)
    except (OSError, sqlite3.Error) as exc:
        raise InputError(f"{path}: cannot open the MLflow database ({exc})") from None
    try:
        run = choose(_database_runs(connection, path), run_id, path, sink)
        rows = connection.execute("SELECT key, value, step, is_nan, timestamp FROM metrics WHERE run_uuid = ?",
                                  (run.run_id,))
        points = bad = 0
        for key, value, step, is_nan, stamp in rows:
            points += 1
            at = as_step(step)
            if at is None:  # a step of Inf (SQLite keeps it), NaN or beyond any run's length
                bad += 1
                continue
            _add(sink, str(key), at, _db_value(value, is_nan))
            if isinstance(stamp, (int, float)):
                sink.time(at, stamp / 1000)
        if bad:
            sink.note("bad-record", f"{path}: {bad} metric rows of run {run.run_id} have a step that is not a "
                      "whole number (Inf, NaN or over 2^62); skipped")
        if not points:
            raise InputError(f"{path}: the MLflow run {run.run_id} has no metrics")
        marks = ",".join("?" * len(META_PARAMS))
        _params_meta(dict(connection.execute(f"SELECT key, value FROM params WHERE run_uuid = ? AND key IN ({marks})",
                                             (run.run_id, *META_PARAMS))), sink)
    except sqlite3.Error as exc:
        raise InputError(f"{path}: cannot read the MLflow database ({in_one_line(exc)})") from None
    finally:
        connection.close()


def _database_runs(connection: sqlite3.Connection, path: Path) -> list[RunInfo]:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"metrics", "runs"} <= tables:
        raise InputError(f"{path}: an SQLite database without MLflow's metrics and runs tables")
    runs = []
    for run_uuid, name, status, start, stage in connection.execute(
            "SELECT run_uuid, name, status, start_time, lifecycle_stage FROM runs"):
        if stage != "deleted":
            runs.append(RunInfo(str(run_uuid), str(name or ""), _as_int(start), str(status or "").lower()))
    return runs


def _db_value(value, is_nan) -> float:
    if is_nan:
        return float("nan")
    try:
        value = float(value)
    except (TypeError, ValueError):
        return float("nan")
    if abs(value) == FLOAT_MAX:  # MLflow stores ±Inf as ±float max (SQL has no Inf)
        return float("inf") if value > 0 else float("-inf")
    return value


def _as_int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def _in_folder(folder: Path) -> Path | None:
    return store_path(folder) if is_store(folder) else None


def _sniff(head: Head) -> bool:
    return head.raw.startswith(SQLITE_MAGIC)


@dataclass(frozen=True)
class _MetricFiles:
    """The metric files of the run being followed, new metrics joining as the run logs them."""

    run: Path

    def update(self, readers: MutableMapping[Path, FollowedFile]) -> None:
        for file, key in metric_files(self.run):
            if file not in readers:
                readers[file] = MetricFile(file, key)


def _follow(path: Path, run_id: str | None, sink: LogSink) -> FileSet:
    return _MetricFiles(run_folder(path, run_id, sink))


def _read_one(path: Path, sink: LogSink) -> None:
    read(path, sink)


# a store holds several runs (--run-id picks one); a file store's metric files are followed, mlflow.db read whole
FORMAT = RunLogFormat(read=_read_one, in_folder=_in_folder, sniff=_sniff, owner=run_of_metric_file, read_run=read,
                      follow=_follow, follows_files=False)
