"""The run-log formats, one line each: the only place that lists them.

Each line names a module of this package that exports one ``FORMAT`` (a :class:`format.RunLogFormat`), its
``--format`` name, where it stands in detection (a folder is asked of the formats by ``folder`` rank, a file's first
bytes by ``file`` rank; None: never detected that way), and the words help and errors use for it. ``--format``'s
choices, ``check-run``'s help and detection's error messages are generated from here before any format module is
imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from mldebug_cli.core.errors import UsageError

if TYPE_CHECKING:
    from mldebug_cli.sources.runlog.format import RunLogFormat


class Entry(NamedTuple):
    """One registry line."""

    name: str  # --format
    module: str  # mldebug_cli.sources.runlog.<module> exports FORMAT
    folder: int | None  # rank when detecting a folder's log (lowest first)
    file: int | None  # rank when sniffing a file's first bytes (lowest first)
    describes: str  # what check-run's RUN argument takes, in its help
    in_folder: str | None = None  # what detection looks for in a folder, in its error message
    renames: Mapping[str, str] = {}  # logged key -> canonical name, for this format only


REGISTRY = (
    Entry("trainer-state", "trainer_state", folder=0, file=4,
          describes="trainer_state.json (or a checkpoint/output folder)", in_folder="trainer_state.json, checkpoint-*/"),
    Entry("jsonl", "jsonl", folder=1, file=3, describes="trainer_log.jsonl", in_folder="trainer_log.jsonl",
          renames={"accuracy": "rewards/accuracies"}),
    Entry("console", "console", folder=None, file=99, describes="a console log"),  # any text: sniffed last
    Entry("tensorboard", "tensorboard", folder=2, file=2, describes="a TensorBoard event file or folder",
          in_folder="TensorBoard event file"),
    Entry("wandb", "wandb", folder=3, file=0, describes="a .wandb file", in_folder=".wandb file"),
    Entry("csv", "csv_export", folder=None, file=5, describes="a W&B CSV export"),
    Entry("mlflow", "mlflow", folder=4, file=1, describes="an MLflow store (mlruns/, an experiment or run folder, "
          "mlflow.db)", in_folder="MLflow store (mlruns/, mlflow.db)"),
    Entry("torchtune", "torchtune", folder=5, file=6, describes="a torchtune log", in_folder="torchtune log_*.txt"),
)
FORMATS = tuple(entry.name for entry in REGISTRY)
BY_FOLDER = tuple(e.name for e in sorted((e for e in REGISTRY if e.folder is not None), key=lambda e: e.folder or 0))
BY_FILE = tuple(e.name for e in sorted((e for e in REGISTRY if e.file is not None), key=lambda e: e.file or 0))


def entry(name: str) -> Entry:
    found = next((line for line in REGISTRY if line.name == name), None)
    if found is None:
        raise UsageError(f"--format: unknown run-log format {name!r}", hint=f"choose one of {', '.join(FORMATS)}")
    return found


def runlog_format(name: str) -> RunLogFormat:
    """The FORMAT object of ``name`` (its module is imported on first use)."""
    return importlib.import_module(f"mldebug_cli.sources.runlog.{entry(name).module}").FORMAT


def renames(name: str) -> Mapping[str, str]:
    found = next((line for line in REGISTRY if line.name == name), None)
    return found.renames if found is not None else {}


def _or_list(words: tuple[str, ...]) -> str:
    return f"{', '.join(words[:-1])} or {words[-1]}" if len(words) > 1 else "".join(words)


def format_help() -> str:
    """``--format``'s help: the names, in registry order."""
    return f"{_or_list(FORMATS)} (default: detected)."


def run_help() -> str:
    """``check-run``'s RUN argument help: what each format reads, in registry order."""
    return ", ".join(entry.describes for entry in REGISTRY) + "."


def folder_holds() -> str:
    """What detection looks for in a folder, in detection order, for its error message."""
    return _or_list(tuple(words for name in BY_FOLDER if (words := entry(name).in_folder) is not None))
