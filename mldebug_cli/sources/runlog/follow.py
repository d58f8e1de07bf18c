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
from pathlib import Path

from mldebug_cli.sources.runlog import detect, read_raw
from mldebug_cli.sources.runlog.format import FileSet, FollowedFile
from mldebug_cli.sources.runlog.model import RowStore, Run, finish
from mldebug_cli.sources.runlog.records import LogSink
from mldebug_cli.sources.runlog.registry import FORMATS, runlog_format


class Follower:
    def __init__(self, path: str | Path, fmt: str | None = None, run_id: str | None = None) -> None:
        path = Path(path)
        self.fmt, self.path = detect(path) if fmt is None else (fmt, path)
        self.run_id = run_id
        # an unknown --format is the first read's error, as without --watch
        self.incremental = self.fmt in FORMATS and runlog_format(self.fmt).followed(self.path)
        self.store, self.sink = self._fresh()
        self.readers: dict[Path, FollowedFile] = {}
        self.identities: dict[Path, tuple[int, int, int]] = {}  # (device, inode, size) when last read
        self.files: FileSet | None = None  # what is followed, known after the first read

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
        read_raw(self.path, self.fmt, self.sink, self.run_id)
        first = self.sink
        self.store, self.sink = self._fresh()
        self.sink.meta.update(first.meta)
        self.sink.notes += [n for n in first.notes if n.kind == "several-runs"]
        follow = runlog_format(self.fmt).follow
        assert follow is not None  # self.incremental
        self.files = follow(self.path, self.run_id, LogSink(self.store))
        self._feed()

    def _feed(self) -> None:
        for reader in self._readers().values():
            if reader.feed(self.sink) is False:  # a console log whose steps now need the whole file
                self.incremental = False

    def _readers(self) -> dict[Path, FollowedFile]:
        assert self.files is not None  # set by the first read
        self.files.update(self.readers)
        return self.readers
