"""Training-run logs from every framework, read with the standard library: detection and dispatch.

``read_run(path, fmt)`` returns a :class:`~mldebug_cli.sources.runlog.model.Run`: per-metric series
with normalised keys and the step axis in optimizer steps, the run kind, and notes on what was repaired.
"""

from __future__ import annotations

from pathlib import Path

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.safe_io import open_regular
from mldebug_cli.sources.runlog.format import Head
from mldebug_cli.sources.runlog.records import LogSink
from mldebug_cli.sources.runlog.registry import BY_FILE, BY_FOLDER, FORMATS, folder_holds, runlog_format

__all__ = ["FORMATS", "detect", "read_raw", "read_run"]

SNIFF_BYTES = 4096


def detect(path: Path) -> tuple[str, Path]:
    """(format, the file or folder to read) for a run given as a file or a folder."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return _detect_folder(path)
    for name in BY_FILE:
        owner = runlog_format(name).owner
        log = owner(path) if owner is not None else None
        if log is not None:  # a file that is part of a larger log (one metric file of an MLflow run): that log
            return name, log
    return _detect_file(path), path


def _detect_folder(folder: Path) -> tuple[str, Path]:
    for name in BY_FOLDER:
        in_folder = runlog_format(name).in_folder
        found = in_folder(folder) if in_folder is not None else None
        if found is not None:
            return name, found
    raise InputError(f"{folder}: no {folder_holds()} in this folder")


def _detect_file(path: Path) -> str:
    try:
        with open_regular(path) as stream:
            raw = stream.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    head = Head(path, raw, raw.decode("utf-8", "replace").lstrip("\ufeff"))
    for name in BY_FILE:
        sniff = runlog_format(name).sniff
        if sniff is not None and sniff(head):
            return name
    raise InputError(f"{path}: binary data in no known run-log format",
                     hint="pass --format to say what it is (" + ", ".join(FORMATS) + ")")


def read_raw(path: Path, fmt: str, sink: LogSink, run_id: str | None = None) -> None:
    chosen = runlog_format(fmt)
    if chosen.resolve is not None:
        path = chosen.resolve(path)
    if chosen.read_run is not None:
        chosen.read_run(path, sink, run_id)
        return
    if run_id is not None:
        raise UsageError("--run-id chooses a run in an MLflow store; this log is " + fmt)
    chosen.read(path, sink)


def read_run(path: str | Path, fmt: str | None = None, run_id: str | None = None):
    """Read a run log (format detected unless ``fmt`` is given) into a Run; ``run_id`` picks an MLflow run."""
    from mldebug_cli.sources.runlog.model import build_run

    given = path = Path(path)
    if fmt is None:
        fmt, path = detect(path)
    elif not path.exists():
        raise InputError(f"{path}: no such file or folder")
    run = build_run(path, fmt, lambda sink: read_raw(path, fmt, sink, run_id))
    if fmt == "trainer-state" and given.is_dir():
        run = _with_board_evals(run, given)
    crashed = bool(run.meta.get("errors"))  # a console log that died before its first step: RN040 reads the crash
    if not crashed and not any(len(series.steps) for series in run.series.values()):  # never a silent "no findings"
        raise InputError(f"{path}: no metric was read from this {fmt} log" + _why_empty(run),
                         hint="check that this is the run's log, and that the run logged at least one step")
    return run


def _with_board_evals(run, folder: Path):
    """An HF Trainer output folder: trainer_state.json is saved with the last checkpoint, so an ``evaluate()`` after
    training is only in the TensorBoard log beside it (``runs/``). Its eval series that trainer_state.json lacks are
    added, keyed as TensorBoard logged them."""
    from dataclasses import replace

    from mldebug_cli.sources.runlog.model import build_run

    found = runlog_format("tensorboard").in_folder
    board_path = found(folder / "runs") if found is not None and (folder / "runs").is_dir() else None
    if board_path is None:
        return run
    try:
        board = build_run(board_path, "tensorboard", lambda sink: read_raw(board_path, "tensorboard", sink))
    except InputError:  # an unreadable board leaves the trainer state as it is
        return run
    extra = {key: series for key, series in board.series.items()
             if key.startswith("eval_") and len(series) and run.get(key) is None}
    if not extra:
        return run
    names = {**run.original_keys, **{key: board.original_keys.get(key, key) for key in extra}}
    return replace(run, series={**run.series, **extra}, original_keys=names,
                   meta={**run.meta, "evals_from": str(board_path)})


def _why_empty(run) -> str:
    notes = [note.message for note in run.notes][:1]
    return f" ({notes[0]})" if notes else ""
