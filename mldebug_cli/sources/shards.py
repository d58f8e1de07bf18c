"""A dataset stored as shards: a folder or glob of Parquet / JSON Lines files, local or where pyarrow's filesystems
reach (s3://, gs://, hdfs://), read as one dataset.

Rows are numbered as in the whole dataset (the shards in name order), and every record names its shard and, for
JSON Lines, its line there. The shards are cut into chunks of whole rows (JSON Lines: ``CHUNK_ROWS`` lines found by
one scan; Parquet: its row groups), so that any process can read any chunk by itself: in this process one after
the other, or in Ray Data's read tasks. A shard that cannot be opened or scanned is set aside with its reason and
the rest are still read.

Remote URIs need the network: they are read only when the user asked for it (``--online`` / ``MLDEBUG_ONLINE=1``),
through filesystems given a time limit (pyarrow's GCS client retries for 15 minutes by default), and the listing
gives up after ``REMOTE_TIMEOUT_SECONDS``. Local globs and folders never follow a link to a folder (``x -> .`` makes
``**`` exponential), and every shard they find must resolve inside the folder the glob starts from.
"""

from __future__ import annotations

import datetime
import fnmatch
import io
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import inside
from mldebug_cli.sources.dataset import (
    MIB,
    DatasetSource,
    Record,
    _bounded_lines,
    _parse_line,
    _rows_of_batch,
    _too_large,
)
from mldebug_cli.sources.parquet_bounds import check_parquet_footer

SHARD_KINDS = {".parquet": "parquet", ".jsonl": "jsonl"}
CHUNK_ROWS = 1024  # rows of JSON Lines per chunk: a multiple of the pipelines' batch size
PARQUET_BATCH = 1000
LOCAL_SCHEMES = ("file",)
REMOTE_TIMEOUT_SECONDS = 30.0  # to connect, and to list a remote dataset
_WILDCARDS = "*?["


@dataclass(frozen=True)
class Chunk:
    """Whole rows of one shard: where they start there and which dataset rows they are."""

    shard: str
    kind: str
    first_row: int  # the chunk's first row, numbered in the whole dataset
    rows: int
    start: int  # JSON Lines: byte offset of its first line; Parquet: its first row group
    stop: int  # JSON Lines: byte offset after its last line; Parquet: after its last row group
    lines_before: int = 0  # JSON Lines: lines of the shard before the chunk


@dataclass(frozen=True)
class Unreadable:
    shard: str
    reason: str


@dataclass(frozen=True)
class ShardPlan:
    spec: str
    chunks: tuple[Chunk, ...]
    unreadable: tuple[Unreadable, ...]

    @property
    def rows(self) -> int:
        return sum(c.rows for c in self.chunks)


def is_sharded(spec: str) -> bool:
    """A glob, a remote URI, or a local folder of Parquet/JSON Lines files (not one written by save_to_disk)."""
    if "://" in spec or any(c in spec for c in _WILDCARDS):
        return True
    path = Path(spec)
    if not path.is_dir() or any((path / name).exists() for name in ("dataset_info.json", "dataset_dict.json", "state.json")):
        return False
    return any(p.suffix.lower() in SHARD_KINDS for p in path.rglob("*") if p.is_file())


def list_shards(spec: str) -> list[str]:
    """The shard files of ``spec`` in name order (a folder is read with its subfolders); a file is its one shard."""
    if os.path.isfile(spec):
        return [spec]
    names = _remote_files(spec) if "://" in spec else _local_files(spec)
    shards = sorted(n for n in names if Path(n).suffix.lower() in SHARD_KINDS)
    if not shards:
        raise InputError(f"{spec}: no Parquet (.parquet) or JSON Lines (.jsonl) files here")
    return shards


def _local_files(spec: str) -> list[str]:
    """The files of a local folder or glob, found without following a link to a folder, each inside the glob's base."""
    parts = Path(spec).parts
    fixed = next((i for i, part in enumerate(parts) if any(c in part for c in _WILDCARDS)), len(parts))
    base = Path(*parts[:fixed]) if fixed else Path(".")
    pattern = _glob_pattern(parts[fixed:]) if fixed < len(parts) else None
    names = []
    for folder, subfolders, files in os.walk(base, followlinks=False):
        subfolders.sort()
        for name in files:
            path = os.path.join(folder, name)
            if (pattern is None or pattern.fullmatch(os.path.relpath(path, base))) and os.path.isfile(path):
                names.append(path)
    return [str(p) for p in inside(base, [Path(n) for n in names])]


def _glob_pattern(parts: tuple[str, ...]) -> re.Pattern[str]:
    """The path below the base that a glob's remaining ``parts`` match (``**`` any number of folders, ``*`` within one)."""
    sep = re.escape(os.sep)
    pieces = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            visible = f"(?!\\.)[^{sep}]+"  # as glob's: a wildcard matches no name starting with a dot
            pieces.append(f"(?:{visible}{sep})*{visible}" if last else f"(?:{visible}{sep})*")
        else:
            hidden = "" if part.startswith(".") else "(?!\\.)"
            pieces.append(hidden + _component(part, sep) + ("" if last else sep))
    return re.compile("".join(pieces), re.DOTALL)


def _component(part: str, sep: str) -> str:
    """One path component of a glob as a regular expression that never crosses a separator."""
    out, i = [], 0
    while i < len(part):
        char = part[i]
        close = part.find("]", i + 2) if char == "[" else -1
        if char == "*":
            out.append(f"[^{sep}]*")
        elif char == "?":
            out.append(f"[^{sep}]")
        elif close > 0:
            inner = part[i + 1 : close]
            negated = inner.startswith("!")
            body = re.escape(inner[1:] if negated else inner).replace("\\-", "-")
            out.append(f"[{'^' if negated else ''}{body}]")
            i = close
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _require_network(uri: str) -> str:
    """The URI's scheme; a one-line error when it needs the network and the user did not ask for it."""
    from mldebug_cli.sources.hub import ONLINE_ENV, online

    scheme = uri.split("://", 1)[0].lower()
    if scheme not in LOCAL_SCHEMES and not online():
        raise InputError(f"{uri}: a {scheme}:// dataset needs the network, and mldebug runs offline",
                         hint=f"pass --online (or set {ONLINE_ENV}=1) to read it")
    return scheme


def _remote(uri: str):
    """(pyarrow filesystem, path) for a URI: local schemes at once; a remote one only when the user asked for the
    network, with a time limit on connecting."""
    from pyarrow import fs

    scheme = _require_network(uri)
    if scheme in LOCAL_SCHEMES:
        return fs.FileSystem.from_uri(uri)
    path = uri.split("://", 1)[1]
    if scheme == "gs":
        limit = datetime.timedelta(seconds=REMOTE_TIMEOUT_SECONDS)
        return fs.GcsFileSystem(retry_time_limit=limit), path
    if scheme == "s3":
        return fs.S3FileSystem(connect_timeout=REMOTE_TIMEOUT_SECONDS, request_timeout=REMOTE_TIMEOUT_SECONDS), path
    return fs.FileSystem.from_uri(uri)


def _within_time(uri: str, work: Callable[[], list[str]]) -> list[str]:
    """``work()``'s result, or a one-line error when it has not finished in ``REMOTE_TIMEOUT_SECONDS`` (a client
    stuck in a network call cannot be interrupted: it is left in a daemon thread, which the exit does not wait for)."""
    result: list[list[str] | BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True, name="mldebug-remote-listing")
    thread.start()
    thread.join(REMOTE_TIMEOUT_SECONDS)
    if not result:
        raise InputError(f"{uri}: no answer in {REMOTE_TIMEOUT_SECONDS:.0f} s listing it (no network, or no such host)")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def _remote_files(spec: str) -> list[str]:
    from pyarrow import fs

    _require_network(spec)
    scheme = spec.split("://", 1)[0] + "://"
    pattern = spec if any(c in spec for c in _WILDCARDS) else None
    base = spec.split("*")[0].split("?")[0].split("[")[0].rsplit("/", 1)[0] if pattern else spec

    def listing() -> list[str]:
        filesystem, root = _remote(base)
        infos = filesystem.get_file_info(fs.FileSelector(root, recursive=True))
        return [scheme + info.path for info in infos if info.type == fs.FileType.File]

    try:
        names = _within_time(spec, listing)
    except (OSError, ValueError) as exc:
        raise InputError(f"{spec}: cannot list it: {in_one_line(exc, 300)}") from None
    return [n for n in names if pattern is None or fnmatch.fnmatch(n, pattern)]


def _open(shard: str):
    """A binary input stream on a local or remote shard."""
    if "://" not in shard:
        return open(shard, "rb")
    filesystem, path = _remote(shard)
    return io.BufferedReader(filesystem.open_input_file(path), buffer_size=MIB)  # pyarrow's files have no readline


def scan_shard(shard: str, chunk_rows: int = CHUNK_ROWS, kind: str | None = None) -> list[Chunk] | Unreadable:
    """The chunks of one shard (numbered from row 0 of the shard), or why it cannot be read; ``kind`` (jsonl or
    parquet) when the name does not say."""
    kind = kind or SHARD_KINDS[Path(shard).suffix.lower()]
    try:
        return _scan_parquet(shard) if kind == "parquet" else _scan_jsonl(shard, chunk_rows)
    except InputError as exc:  # a bound of mldebug's: its message names the shard already
        return Unreadable(shard, exc.message.removeprefix(f"{shard}: "))
    except Exception as exc:  # noqa: BLE001 - pyarrow and the filesystems raise many types for an unreadable file
        return Unreadable(shard, f"{type(exc).__name__}: {in_one_line(exc, 300)}")


def _scan_parquet(shard: str) -> list[Chunk]:
    import pyarrow.parquet as pq

    with _open(shard) as fh:
        check_parquet_footer(fh, shard)
        meta = pq.ParquetFile(fh).metadata
    chunks, first = [], 0
    for group in range(meta.num_row_groups):
        rows = meta.row_group(group).num_rows
        if rows:
            chunks.append(Chunk(shard, "parquet", first, rows, group, group + 1))
            first += rows
    return chunks


def _scan_jsonl(shard: str, chunk_rows: int) -> list[Chunk]:
    with _open(shard) as fh:
        head = fh.read(8192)
        if b"\x00" in head:
            raise ValueError("a binary file, not JSON Lines text")
        fh.seek(0)
        chunks: list[Chunk] = []
        offset = start = line = lines_before = rows = 0
        for raw in _bounded_lines(fh, shard):
            if rows == 0:
                start, lines_before = offset, line
            line += 1  # noqa: SIM113 - counted beside the byte offset, both saved at chunk starts
            offset = fh.tell()
            if isinstance(raw, int) or raw.strip():
                rows += 1
                if rows == chunk_rows:
                    chunks.append(Chunk(shard, "jsonl", len(chunks) * chunk_rows, rows, start, offset, lines_before))
                    rows = 0
        if rows:
            chunks.append(Chunk(shard, "jsonl", len(chunks) * chunk_rows, rows, start, offset, lines_before))
    return chunks


def plan_shards(spec: str, scan: Callable[[list[str]], list[list[Chunk] | Unreadable]] | None = None) -> ShardPlan:
    """Every shard's chunks, numbered as rows of the whole dataset; ``scan`` scans a list of shards (default: one
    after the other here; Ray scans them on its workers)."""
    shards = list_shards(spec)
    scanned = scan(shards) if scan is not None else [scan_shard(s) for s in shards]
    chunks: list[Chunk] = []
    unreadable: list[Unreadable] = []
    first = 0
    for result in scanned:
        if isinstance(result, Unreadable):
            unreadable.append(result)
            continue
        for chunk in result:
            chunks.append(replace(chunk, first_row=first + chunk.first_row))
        first += sum(c.rows for c in result)
    if not chunks and not unreadable:
        raise InputError(f"{spec}: the shards have no rows")
    if not chunks:
        reason = unreadable[0]
        raise InputError(f"{spec}: no shard can be read ({reason.shard}: {reason.reason})")
    return ShardPlan(spec, tuple(chunks), tuple(unreadable))


def read_chunk(chunk: Chunk, wanted: list[int] | None = None, parse: bool = False) -> Iterator[Record]:
    """The chunk's records (only the ``wanted`` dataset rows when given), each naming its shard; when the shard
    stops being readable part way (changed or corrupt since the scan), the rows left are records of the error."""
    keep = None if wanted is None else set(wanted)
    left = chunk.first_row
    try:
        for record in _read_parquet(chunk) if chunk.kind == "parquet" else _read_jsonl(chunk, parse):
            left = record.index + 1
            if keep is None or record.index in keep:
                yield record
    except Exception as exc:  # noqa: BLE001 - pyarrow and the filesystems raise many types for an unreadable file
        reason = f"the shard cannot be read from here on ({type(exc).__name__}: {in_one_line(exc, 200)})"
        for index in range(left, chunk.first_row + chunk.rows):
            if keep is None or index in keep:
                yield Record(index, None, error=reason, path=chunk.shard)


def _read_jsonl(chunk: Chunk, parse: bool) -> Iterator[Record]:
    with _open(chunk.shard) as fh:
        fh.seek(chunk.start)
        index, line = chunk.first_row, chunk.lines_before
        while index < chunk.first_row + chunk.rows:
            raw = next(_bounded_lines(fh, chunk.shard), None)
            if raw is None:
                raise EOFError(f"the file ends before line {line + 1}")
            line += 1
            if isinstance(raw, int):
                yield Record(index, line, error=_too_large(raw), path=chunk.shard)
            elif raw.strip():
                record = _parse_line(index, line, raw) if parse else Record(index, line, raw=raw)
                yield replace(record, path=chunk.shard)
            else:
                continue
            index += 1


def _read_parquet(chunk: Chunk) -> Iterator[Record]:
    import pyarrow.parquet as pq

    with _open(chunk.shard) as fh:
        index = chunk.first_row
        for batch in pq.ParquetFile(fh).iter_batches(PARQUET_BATCH, row_groups=range(chunk.start, chunk.stop)):
            columns = batch.to_pydict()
            for record in _rows_of_batch(columns, range(index, index + batch.num_rows)):
                yield replace(record, path=chunk.shard)
            index += batch.num_rows


class ShardedSource:
    """The shards of ``spec`` as one dataset, read in this process chunk by chunk."""

    def __init__(self, spec: str, plan: ShardPlan | None = None) -> None:
        self.spec = spec
        self._plan = plan

    @property
    def display(self) -> str:
        return self.spec

    @property
    def plan(self) -> ShardPlan:
        if self._plan is None:
            self._plan = plan_shards(self.spec)
        return self._plan

    def __len__(self) -> int:
        return self.plan.rows

    def records(self, indices: list[int] | None = None, parse: bool = True) -> Iterator[Record]:
        wanted = None if indices is None else sorted(set(indices))
        for chunk in self.plan.chunks:
            inside = None if wanted is None else [i for i in wanted if chunk.first_row <= i < chunk.first_row + chunk.rows]
            if inside == []:
                continue
            yield from read_chunk(chunk, inside, parse)


def open_dataset(spec: str, split: str | None = None) -> DatasetSource | ShardedSource:
    """The dataset ``spec`` names: its shards (a folder or glob of them, or a remote URI), or one file, folder or hub id."""
    return ShardedSource(spec) if is_sharded(spec) else DatasetSource(spec, split)
