"""What a run-log format module exports: one ``FORMAT``, a :class:`RunLogFormat`.

The registry (``sources.runlog.registry``) lists the formats; detection, ``--format`` and ``check-run --watch`` ask
these objects, never a format's name.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

from mldebug_cli.sources.runlog.records import LogSink


class Head(NamedTuple):
    """A file's first bytes, as detection sniffs them."""

    path: Path
    raw: bytes
    text: str  # decoded (undecodable bytes replaced), a leading BOM removed

    @property
    def stripped(self) -> str:
        return self.text.lstrip()


class FollowedFile(Protocol):
    """One followed file's incremental reader: each ``feed`` adds what was appended since the last one; False
    says the log can no longer be followed (a console log whose steps now need the whole file)."""

    def feed(self, sink: LogSink) -> object: ...


class FileSet(Protocol):
    """The files ``check-run --watch`` follows for one run, each with its reader."""

    def update(self, readers: MutableMapping[Path, FollowedFile]) -> None:
        """Add a reader for each file to follow that has none yet."""


@dataclass(frozen=True)
class OneFile:
    """A log that is one file (found in a folder by ``locate`` once, when given a folder), followed by one reader."""

    path: Path
    reader: Callable[[Path], FollowedFile]
    locate: Callable[[Path], Path | None] | None = None  # a folder -> its log (None: no log yet, look again)

    def update(self, readers: MutableMapping[Path, FollowedFile]) -> None:
        if readers:
            return
        log = self.locate(self.path) if self.locate is not None and self.path.is_dir() else self.path
        if log is not None:
            readers[log] = self.reader(log)


@dataclass(frozen=True)
class RunLogFormat:
    """One run-log format: how to read it whole, how detection recognises it, and how ``--watch`` follows it."""

    read: Callable[[Path, LogSink], None]
    in_folder: Callable[[Path], Path | None] | None = None  # a folder -> the file or folder to read, if it holds one
    sniff: Callable[[Head], bool] | None = None  # a file's first bytes are this format's
    owner: Callable[[Path], Path | None] | None = None  # a file that is part of a larger log -> that log
    resolve: Callable[[Path], Path] | None = None  # a path given with --format -> what to read (raises if none)
    read_run: Callable[[Path, LogSink, str | None], None] | None = None  # a store of several runs, --run-id picks
    follow: Callable[[Path, str | None, LogSink], FileSet] | None = None  # None: --watch reads it whole each time
    follows_files: bool = True  # False: a file (rather than a folder) of this format is read whole each time

    def followed(self, path: Path) -> bool:
        """Whether ``--watch`` reads ``path`` incrementally."""
        return self.follow is not None and (self.follows_files or not path.is_file())
