"""``check-run --watch``: a run log read as it grows, parsing only what was appended since the last read.

JSONL, torchtune and console logs, TensorBoard event files and MLflow metric files are followed from
where the last read stopped (a line or record the writer has not finished waits for the next read);
``trainer_state.json`` is rewritten whole at each save, and W&B, CSV and ``mlflow.db`` are read whole
too. Each ``poll()`` returns the Run of everything read so far. A followed file is known by its identity
(device, inode) and size: truncated, or replaced by a new file under its name (log rotation, a re-run), it is
read again from its start, and a note says so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from mldebug_cli.sources.runlog import detect, read_raw
from mldebug_cli.sources.runlog.model import RowStore, Run, finish
from mldebug_cli.sources.runlog.records import LogSink

INCREMENTAL = ("jsonl", "torchtune", "console", "tensorboard", "mlflow")



class _Reader(Protocol):
    """One followed file's incremental reader (jsonl, console, tensorboard, mlflow, torchtune)."""

    def feed(self, sink: LogSink) -> object: ...

class Follower:
    def __init__(self, path: str | Path, fmt: str | None = None, run_id: str | None = None) -> None:
        path = Path(path)
        self.fmt, self.path = detect(path) if fmt is None else (fmt, path)
        self.run_id = run_id
        self.incremental = self.fmt in INCREMENTAL and not (self.fmt == "mlflow" and self.path.is_file())
        self.store, self.sink = self._fresh()
        self.readers: dict[Path, _Reader] = {}
        self.identities: dict[Path, tuple[int, int, int]] = {}  # (device, inode, size) when last read
        self.mlflow_run: Path | None = None

    def _fresh(self) -> tuple[RowStore, LogSink]:
        store = RowStore(self.fmt)
        return store, LogSink(store)

    def poll(self) -> Run:
        if self.incremental:
            restarted = self._restarted()
            if restarted:
                self.readers, self.identities = {}, {}
                self.store, self.sink = self._fresh()
            if not self.readers:
                self._first_read()
            else:
                self._feed()
            if restarted:
                self.sink.note("restart", restarted)
            self._remember_identities()
            if self.incremental:  # still: a console log may have just lost its step counts
                return finish(self.path, self.fmt, self.store, self.sink, copy=True)
        self.store, self.sink = self._fresh()
        read_raw(self.path, self.fmt, self.sink, self.run_id)
        return finish(self.path, self.fmt, self.store, self.sink)

    def _restarted(self) -> str | None:
        """Why the followed files must be read again from the start (a file truncated, or replaced by another
        file under its name), else None. A file that is gone is the watch's to judge (it waits, then ends)."""
        for file, (device, inode, size) in self.identities.items():
            try:
                now = os.stat(file)
            except OSError:
                continue
            if (now.st_dev, now.st_ino) != (device, inode):
                return f"{file} was replaced by a new file; read again from its start"
            if now.st_size < size:
                return f"{file} was truncated ({size:,} to {now.st_size:,} bytes); read again from its start"
        return None

    def _remember_identities(self) -> None:
        for file in self.readers:
            try:
                now = os.stat(file)
            except OSError:
                continue
            self.identities[file] = (now.st_dev, now.st_ino, now.st_size)

    def _first_read(self) -> None:
        """The first read is the ordinary one (it checks the format and says what is wrong); then the
        readers that follow the files start where it ended."""
        from mldebug_cli.sources.runlog import mlflow

        read_raw(self.path, self.fmt, self.sink, self.run_id)
        first = self.sink
        self.store, self.sink = self._fresh()
        self.sink.meta.update(first.meta)
        self.sink.notes += [n for n in first.notes if n.kind == "several-runs"]
        if self.fmt == "mlflow":
            self.mlflow_run = mlflow.run_folder(self.path, self.run_id, LogSink(self.store))
        self._feed()

    def _feed(self) -> None:
        for reader in self._readers().values():
            if reader.feed(self.sink) is False:  # a console log whose steps now need the whole file
                self.incremental = False

    def _readers(self) -> dict[Path, _Reader]:
        from mldebug_cli.sources.runlog import console, jsonl, mlflow, tensorboard, torchtune

        if self.fmt == "tensorboard":
            files = tensorboard.event_files(self.path) if self.path.is_dir() else [self.path]
            for file in files:
                self.readers.setdefault(file, tensorboard.EventFile(file))
        elif self.fmt == "mlflow":
            assert self.mlflow_run is not None
            for file, key in mlflow.metric_files(self.mlflow_run):
                self.readers.setdefault(file, mlflow.MetricFile(file, key))
        elif not self.readers:
            maker: dict[str, Callable[[Path], _Reader]] = {
                "jsonl": jsonl.JsonlReader, "torchtune": torchtune.LogReader, "console": console.ConsoleFollower}
            log = torchtune.newest_log(self.path) if self.fmt == "torchtune" and self.path.is_dir() else self.path
            if log is not None:  # a torchtune folder with no log yet: the next poll looks again
                self.readers[log] = maker[self.fmt](log)
        return self.readers
