"""TensorBoard event files (``events.out.tfevents.*``), read with the standard library.

TFRecord framing: u64 length, u32 masked CRC, payload, u32 masked CRC (CRCs not verified; an
impossible length or a short tail ends the file with a note). Each payload is an ``Event``
(wall_time=1, step=2, summary=5); ``Summary.value`` (1) carries ``tag`` (1) and either
``simple_value`` (2, float32: what HF and torchtune write) or a scalar ``tensor`` (8: TF2 / new
PyTorch writers; float_val=5, double_val=6 or tensor_content=4). Tags keep HF's ``train/``/``eval/``
prefixes; the model renames them.
"""

from __future__ import annotations

import struct
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import inside, open_regular
from mldebug_cli.sources.runlog.format import FileSet, FollowedFile, Head, RunLogFormat
from mldebug_cli.sources.runlog.protobuf import (
    BYTES,
    FIXED32,
    FIXED64,
    VARINT,
    WireError,
    as_bytes,
    as_double,
    as_float32,
    as_int,
    fields,
    signed64,
)
from mldebug_cli.sources.runlog.records import LogSink

PATTERN = "events.out.tfevents*"
MAX_RECORD = 1 << 28  # no scalar event comes near this; a bigger length means the bytes are not TFRecords
DT_FLOAT, DT_DOUBLE = 1, 2


def event_files(folder: Path) -> list[Path]:
    return inside(folder, sorted(folder.rglob(PATTERN), key=lambda p: (p.name, str(p))))


def read(path: Path, sink: LogSink) -> None:
    files = event_files(path) if path.is_dir() else [path]
    if not files:
        raise InputError(f"{path}: no TensorBoard event files (events.out.tfevents.*) in this folder")
    events = 0
    for file in files:
        events += EventFile(file).feed(sink, final=True)
    if events == 0 and not path.is_dir():
        raise InputError(f"{path}: not a TensorBoard event file (no TFRecord event could be read)")
    sink.meta["event_files"] = len(files)


class EventFile:
    """One event file, read record by record from where the last read stopped (``--watch``: a record
    the writer has not finished waits for the next read)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.events = 0
        self.bad_events = 0
        self.broken = False

    def feed(self, sink: LogSink, final: bool = False) -> int:
        """Reads the whole records appended since the last call; the number of events read."""
        if self.broken:
            return 0
        before = self.events
        try:
            with open_regular(self.path) as stream:
                stream.seek(self.offset)
                while True:
                    header = stream.read(12)
                    if not header:
                        break
                    length = struct.unpack("<Q", header[:8])[0] if len(header) == 12 else -1
                    if length > MAX_RECORD:
                        return self._stop(sink, "an impossible record length")
                    payload = stream.read(length) if length >= 0 else b""
                    footer = stream.read(4)
                    if length < 0 or len(payload) < length or len(footer) < 4:
                        return self._stop(sink, "a truncated last record") if final else self.events - before
                    try:
                        _event(payload, sink)
                    except WireError as exc:  # the framing holds: this event is skipped, the rest is read
                        if self.events == 0 and self.offset == 0:
                            return self._stop(sink, f"an unreadable event ({exc})")
                        self.bad_events += 1
                        if self.bad_events == 1:
                            sink.note("bad-record", f"{self.path.name}: event {self.events + 1} could not be "
                                      f"decoded ({exc}); skipped, and so is any other such event")
                    self.offset += 16 + length
                    self.events += 1
        except OSError as exc:
            raise InputError(f"{self.path}: cannot read the event file ({exc})") from None
        return self.events - before

    def _stop(self, sink: LogSink, what: str) -> int:
        self.broken = True
        return _stop(sink, self.path, self.events, what)


def _stop(sink: LogSink, path: Path, events: int, what: str) -> int:
    if events == 0:
        raise InputError(f"{path}: not a TensorBoard event file ({what} at the start)")
    sink.note("truncated", f"{path.name}: {what} after {events} events; the rest of the file was ignored")
    return events


def _event(payload: bytes, sink: LogSink) -> None:
    step, summary, wall_time = 0, None, None
    for number, _wire, value in fields(payload, {1: (FIXED64,), 2: (VARINT,), 5: (BYTES,)}):
        if number == 1:
            wall_time = as_double(as_bytes(value))
        elif number == 2:
            step = signed64(as_int(value))
        elif number == 5:
            summary = as_bytes(value)
    if summary is None:
        return
    values: dict[str, float] = {}
    for number, _wire, value in fields(summary, {1: (BYTES,)}):
        if number == 1:
            tag_value = _scalar(as_bytes(value))
            if tag_value is not None:
                values[tag_value[0]] = tag_value[1]
    if values:
        sink.add(step, values)
        sink.time(step, wall_time)


def _scalar(value: bytes) -> tuple[str, float] | None:
    tag, scalar = None, None
    for number, _wire, item in fields(value, {1: (BYTES,), 2: (FIXED32,), 8: (BYTES,)}):
        if number == 1:
            tag = as_bytes(item).decode("utf-8", "replace")
        elif number == 2:
            scalar = as_float32(as_bytes(item))
        elif number == 8:
            scalar = _tensor_scalar(as_bytes(item))
    return None if tag is None or scalar is None else (tag, scalar)


def _tensor_scalar(tensor: bytes) -> float | None:
    dtype, dims, found = 0, 0, []
    for number, wire, item in fields(tensor, {1: (VARINT,), 2: (BYTES,), 4: (BYTES,), 5: (FIXED32, BYTES),
                                              6: (FIXED64, BYTES)}):
        if number == 1:
            dtype = as_int(item)
        elif number == 2:
            dims = sum(1 for n, _w, _v in fields(as_bytes(item), {2: (BYTES,)}) if n == 2)
        elif number == 4:
            found = _unpack(as_bytes(item), dtype)
        elif number == 5:
            found = [as_float32(as_bytes(item))] if wire == 5 else _unpack(as_bytes(item), DT_FLOAT)
        elif number == 6:
            found = [as_double(as_bytes(item))] if wire == 1 else _unpack(as_bytes(item), DT_DOUBLE)
    if dtype not in (DT_FLOAT, DT_DOUBLE) or dims or len(found) != 1:
        return None
    return found[0]


def _unpack(raw: bytes, dtype: int) -> list[float]:
    size, fmt = (4, "f") if dtype == DT_FLOAT else (8, "d") if dtype == DT_DOUBLE else (0, "")
    if not size or len(raw) % size:
        return []
    return list(struct.unpack(f"<{len(raw) // size}{fmt}", raw))


def _in_folder(folder: Path) -> Path | None:
    return folder if event_files(folder) else None


def _sniff(head: Head) -> bool:
    return "tfevents" in head.path.name or _looks_like_tfrecord(head.raw)


def _looks_like_tfrecord(head: bytes) -> bool:
    """The first TFRecord holds the file_version event: a short length then ``brain.Event:`` inside."""
    if len(head) < 12:
        return False
    length = struct.unpack("<Q", head[:8])[0]
    return 0 < length < 1024 and b"brain.Event" in head[12:12 + length]


@dataclass(frozen=True)
class _EventFiles:
    """Every event file of a run folder, new ones joining as the writer starts them."""

    path: Path

    def update(self, readers: MutableMapping[Path, FollowedFile]) -> None:
        for file in event_files(self.path) if self.path.is_dir() else [self.path]:
            if file not in readers:
                readers[file] = EventFile(file)


def _follow(path: Path, run_id: str | None, sink: LogSink) -> FileSet:
    return _EventFiles(path)


FORMAT = RunLogFormat(read=read, in_folder=_in_folder, sniff=_sniff, follow=_follow)
