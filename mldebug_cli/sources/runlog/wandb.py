"""W&B's offline transaction log (``run-<id>.wandb``, or the run folder holding it), standard library only.

A 7-byte header (``:W&B``, magic 0xBEE1, version 0), then the LevelDB log format: 32 KiB blocks of
chunks with a 7-byte header (crc32 seeded with the type byte, u16 length, type FULL=1 FIRST=2
MIDDLE=3 LAST=4). Each record is a ``wandb_internal.Record``; ``history`` (2) holds
``HistoryRecord{item=1{key=1, nested_key=2, value_json=16}, step=2{num=1}}``. The step is HF's
``train/global_step`` when present (W&B's ``_step`` is its own row counter). Reading stops at a bad
CRC or a cut tail (W&B's own reader raises there; the real files end like that).
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import inside, read_bytes
from mldebug_cli.sources.runlog.format import Head, RunLogFormat
from mldebug_cli.sources.runlog.protobuf import BYTES, WireError, as_bytes, as_int, fields
from mldebug_cli.sources.runlog.records import LogSink, as_step, number

MAGIC = b":W&B"
HEADER_LEN, BLOCK, CHUNK_HEADER = 7, 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
HISTORY = 2


def find_file(folder: Path) -> Path | None:
    found = inside(folder, sorted(folder.rglob("*.wandb")))
    return found[-1] if found else None


def read(path: Path, sink: LogSink) -> None:
    if path.is_dir():
        found = find_file(path)
        if found is None:
            raise InputError(f"{path}: no .wandb file in this folder")
        path = found
    try:
        data = read_bytes(path)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the W&B log ({exc})") from None
    if not data.startswith(MAGIC) or len(data) < HEADER_LEN:
        raise InputError(f"{path}: not a W&B transaction log (no ':W&B' header)")
    rows = 0
    for record in _records(data, path, sink):
        try:
            rows += _history(record, sink)
        except (WireError, UnicodeDecodeError):
            sink.note("bad-record", "a history record could not be decoded; skipped")
    sink.meta["wandb_history_rows"] = rows


def _records(data: bytes, path: Path, sink: LogSink) -> Iterator[bytes]:
    pos, pending = HEADER_LEN, bytearray()
    while pos < len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:
            pos += left
            continue
        if pos + CHUNK_HEADER > len(data):
            return _cut(sink, "a truncated chunk header at the end")
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + CHUNK_HEADER])
        body = data[pos + CHUNK_HEADER:pos + CHUNK_HEADER + length]
        if kind == 0 and length == 0 and crc == 0:  # zero padding at a block's end
            pos += left
            continue
        if len(body) < length:
            return _cut(sink, "a truncated last record")
        if zlib.crc32(body, zlib.crc32(bytes([kind]))) & 0xFFFFFFFF != crc:
            return _cut(sink, f"a record with a bad checksum at byte {pos}")
        pos += CHUNK_HEADER + length
        if kind == FULL:
            yield body
        elif kind == FIRST:
            pending = bytearray(body)
        elif kind == MIDDLE:
            pending += body
        elif kind == LAST:
            pending += body
            yield bytes(pending)
            pending = bytearray()
        else:
            return _cut(sink, f"an unknown chunk type {kind} at byte {pos}")


def _cut(sink: LogSink, what: str) -> None:
    sink.note("truncated", f"the log ends in {what}; the records before it were read")


def _history(record: bytes, sink: LogSink) -> int:
    history = next((v for n, w, v in fields(record) if n == HISTORY and w == 2), None)
    if history is None:
        return 0
    values: dict[str, float] = {}
    step = None
    for number_, wire, value in fields(as_bytes(history)):
        if number_ == 1 and wire == 2:
            key, parsed = _item(as_bytes(value))
            if key is not None and parsed is not None:
                values[key] = parsed
        elif number_ == 2 and wire == 2:
            for n, w, v in fields(as_bytes(value)):
                if n == 1 and w == 0:
                    step = v
    global_step = as_step(values.pop("train/global_step", None))
    if global_step is None and step is not None:
        global_step = as_int(step) + 1
    sink.time(global_step, values.get("_timestamp"))  # W&B stamps each history row (seconds since the epoch)
    for key in [k for k in values if k.startswith("_")]:
        values.pop(key)
    if values:
        sink.add(global_step, values)
    return 1


def _item(item: bytes) -> tuple[str | None, float | None]:
    key, nested, raw = None, [], None
    for number_, _wire, value in fields(item, {1: (BYTES,), 2: (BYTES,), 16: (BYTES,)}):
        if number_ == 1:
            key = as_bytes(value).decode("utf-8")
        elif number_ == 2:
            nested.append(as_bytes(value).decode("utf-8"))
        elif number_ == 16:
            raw = as_bytes(value).decode("utf-8")
    if nested and key is None:
        key = "/".join(nested)
    if raw is None:
        return key, None
    try:
        return key, number(json.loads(raw))
    except (ValueError, RecursionError):  # not JSON, or an integer over Python's digit limit
        return key, None


def _sniff(head: Head) -> bool:
    return head.raw.startswith(MAGIC)


FORMAT = RunLogFormat(read=read, in_folder=find_file, sniff=_sniff)
