"""Training-run logs from every framework, read with the standard library: detection and dispatch.

``read_run(path, fmt)`` returns a :class:`~mldebug_cli.sources.runlog.model.Run`: per-metric series
with normalised keys and the step axis in optimizer steps, the run kind, and notes on what was repaired.
"""

from __future__ import annotations

import importlib
import re
import struct
from pathlib import Path

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.safe_io import open_regular

FORMATS = {
    "trainer-state": "trainer_state",
    "jsonl": "jsonl",
    "console": "console",
    "tensorboard": "tensorboard",
    "wandb": "wandb",
    "csv": "csv_export",
    "mlflow": "mlflow",
    "torchtune": "torchtune",
}
SNIFF_BYTES = 4096
_TORCHTUNE_LINE = re.compile(r"Step \d+ \| ")


def detect(path: Path) -> tuple[str, Path]:
    """(format, the file or folder to read) for a run given as a file or a folder."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if path.is_dir():
        return _detect_folder(path)
    from mldebug_cli.sources.runlog import mlflow

    run = mlflow.run_of_metric_file(path)
    if run is not None:  # one metric file of an MLflow run: the run it belongs to
        return "mlflow", run
    return _detect_file(path), path


def _detect_folder(folder: Path) -> tuple[str, Path]:
    from mldebug_cli.sources.runlog import mlflow, tensorboard, torchtune, trainer_state, wandb

    state = trainer_state.newest_state(folder)
    if state is not None:
        return "trainer-state", state
    if (folder / "trainer_log.jsonl").is_file():
        return "jsonl", folder / "trainer_log.jsonl"
    if tensorboard.event_files(folder):
        return "tensorboard", folder
    found = wandb.find_file(folder)
    if found is not None:
        return "wandb", found
    if mlflow.is_store(folder):
        return "mlflow", mlflow.store_path(folder)
    found = torchtune.newest_log(folder)
    if found is not None:
        return "torchtune", found
    raise InputError(f"{folder}: no trainer_state.json, checkpoint-*/, trainer_log.jsonl, TensorBoard event file, "
                     ".wandb file, MLflow store (mlruns/, mlflow.db) or torchtune log_*.txt in this folder")


def _detect_file(path: Path) -> str:
    try:
        with open_regular(path) as stream:
            head = stream.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc})") from None
    if head.startswith(b":W&B"):
        return "wandb"
    if head.startswith(b"SQLite format 3\x00"):
        return "mlflow"
    if "tfevents" in path.name or _looks_like_tfrecord(head):
        return "tensorboard"
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    stripped = text.lstrip()
    if path.name.endswith(".jsonl") or (stripped.startswith("{\"") and "\n{" in stripped):
        return "jsonl"
    if stripped.startswith("{") and ("log_history" in text or path.name.endswith(".json")):
        return "trainer-state"
    if path.suffix.lower() == ".csv":
        return "csv"
    if _TORCHTUNE_LINE.match(stripped):
        return "torchtune"
    if _looks_binary(head, text):
        raise InputError(f"{path}: binary data in no known run-log format",
                         hint="pass --format to say what it is (" + ", ".join(FORMATS) + ")")
    return "console"


def _looks_binary(head: bytes, text: str) -> bool:
    """More than a few NUL bytes, or a tenth of the text undecodable or control bytes (a console capture may hold
    a stray NUL: torch's DataLoader worker writes one after its bus-error message)."""
    odd = sum(1 for c in text if c == "\ufffd" or (c < " " and c not in "\t\n\r\x1b"))
    return head.count(b"\x00") > max(8, len(head) // 100) or odd > max(8, len(text) // 10)


def _looks_like_tfrecord(head: bytes) -> bool:
    """The first TFRecord holds the file_version event: a short length then ``brain.Event:`` inside."""
    if len(head) < 12:
        return False
    length = struct.unpack("<Q", head[:8])[0]
    return 0 < length < 1024 and b"brain.Event" in head[12:12 + length]


def read_raw(path: Path, fmt: str, sink, run_id: str | None = None) -> None:
    if fmt not in FORMATS:
        raise UsageError(f"--format: unknown run-log format {fmt!r}", hint=f"choose one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"mldebug_cli.sources.runlog.{FORMATS[fmt]}")
    if fmt == "trainer-state" and path.is_dir():
        from mldebug_cli.sources.runlog.trainer_state import newest_state

        found = newest_state(path)
        if found is None:
            raise InputError(f"{path}: no trainer_state.json here or in a checkpoint-*/ folder")
        path = found
    if fmt == "mlflow":
        module.read(path, sink, run_id)
        return
    if run_id is not None:
        raise UsageError("--run-id chooses a run in an MLflow store; this log is " + fmt)
    module.read(path, sink)


def read_run(path: str | Path, fmt: str | None = None, run_id: str | None = None):
    """Read a run log (format detected unless ``fmt`` is given) into a Run; ``run_id`` picks an MLflow run."""
    from mldebug_cli.sources.runlog.model import build_run

    path = Path(path)
    if fmt is None:
        fmt, path = detect(path)
    elif not path.exists():
        raise InputError(f"{path}: no such file or folder")
    run = build_run(path, fmt, lambda sink: read_raw(path, fmt, sink, run_id))
    crashed = bool(run.meta.get("errors"))  # a console log that died before its first step: RN040 reads the crash
    if not crashed and not any(len(series.steps) for series in run.series.values()):  # never a silent "no findings"
        raise InputError(f"{path}: no metric was read from this {fmt} log" + _why_empty(run),
                         hint="check that this is the run's log, and that the run logged at least one step")
    return run


def _why_empty(run) -> str:
    notes = [note.message for note in run.notes][:1]
    return f" ({notes[0]})" if notes else ""
