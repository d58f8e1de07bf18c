"""Reading dataset files row by row, with the file line of every row where there is one.

JSON and JSON Lines are read here (streaming, so one bad line becomes a finding for that line and
the rest is still checked); Parquet, CSV, Arrow folders written by ``save_to_disk`` and cached hub
datasets are read with ``datasets``. Files are only ever opened for reading.

A row larger than ``MAX_ROW_BYTES`` or nested deeper than ``MAX_DEPTH`` is a record error, not data: no
trainer takes a row of millions of tokens, and rendering and tokenizing one costs gigabytes (a JSON Lines
row that large is skipped without ever being held in memory).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import note_inputs, open_regular, read_bytes, require_regular
from mldebug_cli.sources.hub import require_local_or_cached, stay_offline
from mldebug_cli.sources.json_array import NESTED_TOO_DEEPLY, json_array_elements, number_too_long
from mldebug_cli.sources.parquet_bounds import check_parquet_footer

BINARY_SNIFF_BYTES = 8192
MIB = 2**20
MAX_ROW_BYTES = 8 * MIB  # ~2M tokens, twice the longest context windows
MAX_DEPTH = 100  # real rows (tool schemas included) nest a few dozen levels; Python recursion gives out near 500
MAX_CSV_COLUMNS = 10_000
MAX_BLANK_RUN = 1_000_000  # blank lines in a row in a JSON Lines file
_SURROGATE = re.compile("[\ud800-\udfff]")
_DATASETS_BUILDERS = {".parquet": "parquet", ".csv": "csv", ".tsv": "csv", ".arrow": "arrow"}


@dataclass(frozen=True)
class Record:
    """One dataset row as read from the file, or why it could not be read."""

    index: int  # 0-based row
    line: int | None  # 1-based line in the file (JSON and JSON Lines)
    data: Any = None
    error: str | None = None
    raw: bytes | str | None = None  # a row's JSON text not parsed yet: ``records(parse=False)``
    path: str | None = None  # the shard it was read from, when the dataset is sharded (sources.shards)

    def parsed(self) -> Record:
        """This record with its raw line parsed (so worker processes can parse what the reader only split)."""
        if self.raw is None:
            return self
        record = _parse_line(self.index, self.line, self.raw)
        return record if self.path is None else replace(record, path=self.path)


class DatasetSource:
    """A dataset file, folder or cached hub id, read lazily."""

    def __init__(self, spec: str, split: str | None = None) -> None:
        self.spec = spec
        self.split = split
        self.path = Path(spec)
        self.kind = _kind_of(self.path, spec)
        self._hf = None
        self._num_rows: int | None = None

    @property
    def display(self) -> str:
        return self.spec

    def __len__(self) -> int:
        if self._num_rows is None:
            if self.kind == "jsonl":
                self._num_rows = sum(1 for _ in self._jsonl_lines())
            elif self.kind == "json":
                self._num_rows = sum(1 for _ in self._json_records(parse=False))
            else:
                self._num_rows = len(self._hf_dataset())
        return self._num_rows

    def records(self, indices: Iterator[int] | list[int] | None = None, parse: bool = True) -> Iterator[Record]:
        """Rows in order; only ``indices`` (sorted, 0-based) when given.

        ``parse=False`` leaves JSON and JSON Lines rows as text for ``Record.parsed`` (other kinds come parsed).
        """
        wanted = None if indices is None else sorted(set(indices))
        if self.kind == "jsonl":
            yield from _pick(self._jsonl_records(parse), wanted)
        elif self.kind == "json":
            yield from _pick(self._json_records(parse), wanted)
        else:
            yield from self._hf_records(wanted)

    # JSON Lines -----------------------------------------------------------------------------
    def _open_text(self):
        _refuse_binary(self.path)
        return open_regular(self.path)

    def _jsonl_lines(self) -> Iterator[tuple[int, bytes | int]]:
        """(line number, raw line) for every non-blank line; the size instead of the line when it is over the limit."""
        with self._open_text() as fh:
            for number, raw in enumerate(_bounded_lines(fh, self.spec), start=1):
                if number == 1 and isinstance(raw, bytes):
                    raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark is not part of row 0
                if isinstance(raw, int) or raw.strip():
                    yield number, raw

    def _jsonl_records(self, parse: bool) -> Iterator[Record]:
        index = -1
        for index, (number, raw) in enumerate(self._jsonl_lines()):
            if isinstance(raw, int):
                yield Record(index, number, error=_too_large(raw))
            else:
                yield _parse_line(index, number, raw) if parse else Record(index, number, raw=raw)
        if index < 0:
            raise InputError(f"{self.spec}: the file has no rows")

    # JSON array (or one object) -----------------------------------------------------------------
    def _json_records(self, parse: bool) -> Iterator[Record]:
        if _first_char(self.path) == "{":
            line, data = _read_single_object(self.path)
            yield Record(0, line, error=data.reason) if isinstance(data, _Unreadable) else Record(0, line, data)
            return
        for element in json_array_elements(self.path, MAX_ROW_BYTES):
            if element.error is not None:
                yield Record(element.index, element.line, error=element.error)
            elif element.text is None:
                yield Record(element.index, element.line, error=_too_large(element.size, "characters"))
            elif not parse:
                yield Record(element.index, element.line, raw=element.text)
            else:
                yield _shaped(element.index, element.line, element.value, element.text)

    # datasets ---------------------------------------------------------------------------------
    def _hf_dataset(self):
        if self._hf is None:
            self._hf = _load_with_datasets(self.path, self.spec, self.kind, self.split)
        return self._hf

    def _hf_records(self, wanted: list[int] | None) -> Iterator[Record]:
        ds = self._hf_dataset()
        indices = range(len(ds)) if wanted is None else [i for i in wanted if i < len(ds)]
        for start in range(0, len(indices), 1000):
            chunk = list(indices[start : start + 1000])
            try:
                batch = ds[start : start + len(chunk)] if wanted is None else ds.select(chunk).to_dict()
            except Exception:  # noqa: BLE001 - pyarrow raises many types for a value it cannot decode
                yield from (_decoded_row(ds, index) for index in chunk)  # one by one, to name the rows
            else:
                yield from _rows_of_batch(batch, chunk)


def _decoded_row(ds, index: int) -> Record:
    """Row ``index`` of a datasets table, or a record of why its values cannot be decoded (a corrupt file)."""
    try:
        row = ds[index]
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a value it cannot decode
        return Record(index, None, error=f"the row cannot be decoded ({type(exc).__name__}: "
                                         f"{in_one_line(exc, 200)})")
    return next(_rows_of_batch({c: [v] for c, v in row.items()}, [index]))


def _pick(records: Iterator[Record], wanted: list[int] | None) -> Iterator[Record]:
    if wanted is None:
        yield from records
        return
    pending = iter(wanted)
    target = next(pending, None)
    for record in records:
        if target is None:
            return
        if record.index == target:
            yield record
            target = next(pending, None)


def _rows_of_batch(batch: dict[str, list], indices) -> Iterator[Record]:
    columns = list(batch)
    for offset, index in enumerate(indices):
        row = {c: batch[c][offset] for c in columns}
        problem = _shape_problem(row, count_text=True)
        yield Record(index, None, error=problem) if problem else Record(index, None, row)


def _bounded_lines(fh, name: str = "", first_line: int = 1) -> Iterator[bytes | int]:
    """Lines of a binary file; a line longer than MAX_ROW_BYTES is read in chunks and given as its size. Over
    ``MAX_BLANK_RUN`` blank lines in a row (200 MB of newlines is 200 million Python loop turns in every pass) is a
    one-line error naming the file (``name``) and the run's first line (``first_line``: the number of the first)."""
    blank = 0
    number = first_line - 1
    while line := fh.readline(MAX_ROW_BYTES + 1):
        number += 1
        if len(line) <= MAX_ROW_BYTES or line.endswith(b"\n"):
            if not line.isspace():
                blank = 0
            else:
                blank += 1
                if blank > MAX_BLANK_RUN:
                    raise InputError(f"{name}:{number - blank + 1}: over {MAX_BLANK_RUN:,} blank lines in a row; "
                                     "mldebug stops reading there", hint="remove the blank lines")
            yield line
            continue
        blank = 0
        size = len(line)
        for chunk in iter(lambda: fh.readline(MIB), b""):
            size += len(chunk)
            if chunk.endswith(b"\n"):
                size -= 1
                break
        yield size


class _Unreadable:
    """Stands in for a JSON array element too large or too deep to inspect."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _too_large(size: int, unit: str = "bytes") -> str:
    return f"row is {size:,} {unit} long, over the {MAX_ROW_BYTES // MIB} MiB mldebug inspects per row"


def _shape_problem(value: Any, count_text: bool = False, surrogates: bool = False) -> str | None:
    """Why a parsed row is nested too deeply (or, with ``count_text``, holds too much text; with ``surrogates``, a
    lone UTF-16 surrogate, which no tokenizer takes), else None.

    Iterative, since the row may be nested deeper than Python's recursion limit.
    """
    stack = [(value, 1)]
    text = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            text += len(item) if count_text else 0
            if surrogates and (lone := _SURROGATE.search(item)):
                return f"row holds a lone surrogate \\u{ord(lone.group()):04x}, which is not Unicode text (no tokenizer takes it)"
            if text > MAX_ROW_BYTES:
                return f"row holds over {MAX_ROW_BYTES // MIB} MiB of text, more than mldebug inspects per row"
        elif isinstance(item, (list, tuple, dict)):
            if depth > MAX_DEPTH:
                return f"row is nested more than {MAX_DEPTH} levels deep"
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return None


def _kind_of(path: Path, spec: str) -> str:
    if path.is_dir():
        if (path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists() or (path / "state.json").exists():
            check_saved_dataset(path)
            return "arrow"
        raise InputError(
            f"{spec}: a folder, but not one written by datasets' save_to_disk",
            hint="pass a .json/.jsonl/.parquet/.csv file, a save_to_disk folder or a cached hub dataset id",
        )
    if path.exists() or path.is_symlink():
        require_regular(path)
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            return "jsonl"
        if suffix == ".json":
            first = _first_char(path)
            return "json" if first == "[" or (first == "{" and not _first_line_is_json(path)) else "jsonl"
        if suffix in _DATASETS_BUILDERS:
            if suffix in (".csv", ".tsv"):
                _check_csv_header(path, "\t" if suffix == ".tsv" else ",")
            elif suffix == ".parquet":
                with open_regular(path) as fh:
                    check_parquet_footer(fh, spec)
            return _DATASETS_BUILDERS[suffix]
        raise InputError(
            f"{spec}: unsupported file type {suffix or '(none)'!r}",
            hint="supported: .json, .jsonl, .parquet, .csv, .tsv, .arrow, a save_to_disk folder, a cached hub id",
        )
    if _looks_like_hub_id(spec):
        require_local_or_cached(spec, "dataset", repo_type="dataset")  # a path-like name: no such file, at once
        return "hub"
    raise InputError(f"{spec}: no such file or folder")


def _check_csv_header(path: Path, delimiter: str) -> None:
    """A CSV dataset's header within mldebug's column limit (datasets would spend minutes and gigabytes on a
    million columns)."""
    with open_regular(path) as fh:
        header = fh.readline(MAX_ROW_BYTES + 1)
    columns = header.count(delimiter.encode()) + 1
    if columns > MAX_CSV_COLUMNS:
        raise InputError(f"{path}:1: the header has {columns:,} columns; mldebug reads datasets of up to "
                         f"{MAX_CSV_COLUMNS:,}")


def check_saved_dataset(folder: Path) -> None:
    """A ``save_to_disk`` folder whose files are all inside it and regular: ``state.json`` names its data files and
    ``dataset_dict.json`` its split folders, and datasets opens whatever path they name."""
    splits = [folder]
    listing = folder / "dataset_dict.json"
    if listing.exists():
        names = _saved_json(listing).get("splits")
        splits = [folder / str(name) for name in names] if isinstance(names, list) else []
    for split in splits:
        _contained(folder, split, listing)
        state_file = split / "state.json"
        if not state_file.exists():
            continue
        files = _saved_json(state_file).get("_data_files")
        for entry in files if isinstance(files, list) else []:
            name = entry.get("filename") if isinstance(entry, dict) else None
            if not isinstance(name, str):
                raise InputError(f"{state_file}: _data_files entry {entry!r:.80} has no filename")
            require_regular(_contained(folder, split / name, state_file))
        for name in ("dataset_info.json", "state.json"):
            if (split / name).exists():
                require_regular(split / name)
    note_inputs([folder])


def _contained(folder: Path, path: Path, named_in: Path) -> Path:
    """``path`` if it stays inside ``folder`` after symlinks and ``..``; else a one-line error naming the file."""
    inside = os.path.realpath(path)
    if os.path.commonpath([inside, os.path.realpath(folder)]) != os.path.realpath(folder):
        raise InputError(f"{named_in}: names {path.relative_to(folder) if path.is_relative_to(folder) else path}, "
                         f"which is outside the dataset folder {folder}")
    return path


def _saved_json(path: Path) -> dict:
    try:
        value = json.loads(read_bytes(path))
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not readable JSON ({in_one_line(exc, 200)})") from None
    if not isinstance(value, dict):
        raise InputError(f"{path}: expected a JSON object")
    return value


def _looks_like_hub_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/")) and os.sep not in spec.replace("/", "")


def _refuse_binary(path: Path) -> None:
    head = _head(path)
    if not head:
        raise InputError(f"{path}: the file is empty")
    if b"\x00" in head:
        raise InputError(f"{path}: this is a binary file, not JSON text")


def _head(path: Path) -> bytes:
    """The first bytes after the byte-order mark and the white space before them (read on past any number of blank
    lines: a file is empty only when nothing but white space is in it)."""
    with open_regular(path) as fh:
        head = fh.read(BINARY_SNIFF_BYTES).removeprefix(b"\xef\xbb\xbf").lstrip()
        while not head and (chunk := fh.read(MIB)):
            head = chunk.lstrip()
    return head[:BINARY_SNIFF_BYTES]


def _first_char(path: Path) -> str:
    _refuse_binary(path)
    return _head(path)[:1].decode("latin-1")


def _first_line_is_json(path: Path) -> bool:
    with open_regular(path) as fh:
        first = fh.readline(MAX_ROW_BYTES + 1).removeprefix(b"\xef\xbb\xbf")
    if len(first) > MAX_ROW_BYTES:  # too long to be one pretty-printed object's first line: JSON Lines
        return True
    try:
        json.loads(first)
    except (ValueError, RecursionError):
        return False
    return True


def _parse_line(index: int, number: int | None, raw: bytes | str) -> Record:
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        return Record(index, number, error=f"line is not valid UTF-8 (byte {exc.start})")
    try:
        data = json.loads(text)
    except RecursionError:
        return Record(index, number, error=NESTED_TOO_DEEPLY)
    except json.JSONDecodeError as exc:
        return Record(index, number, error=f"invalid JSON at column {exc.colno}: {exc.msg}")
    except ValueError:  # an integer over Python's digit limit
        return Record(index, number, error=number_too_long())
    return _shaped(index, number, data, text)


def _shaped(index: int, line: int | None, data: Any, text: str) -> Record:
    """The parsed row, or its shape problem (``text`` is its JSON: fewer brackets than the limit, and no escaped
    surrogate, need no walk)."""
    if text.count("[") + text.count("{") > MAX_DEPTH or "\\ud" in text.lower():
        problem = _shape_problem(data, surrogates=True)
        if problem:
            return Record(index, line, error=problem)
    return Record(index, line, data)


def _read_single_object(path: Path) -> tuple[int, Any]:
    """A .json file holding one pretty-printed object: one row (its line, and the object or why it is unreadable)."""
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 (byte {exc.start})") from None
    start = len(text) - len(text.lstrip())
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except RecursionError:
        raise InputError(f"{path}:1: the object is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    if text[end:].strip():
        line = 1 + text.count("\n", 0, end)
        raise InputError(f"{path}:{line}: unexpected text after the JSON object")
    line = 1 + text.count("\n", 0, start)
    if end - start > MAX_ROW_BYTES:
        return line, _Unreadable(_too_large(end - start, "characters"))
    problem = _shape_problem(value)
    return line, (_Unreadable(problem) if problem else value)


def _load_with_datasets(path: Path, spec: str, kind: str, split: str | None):
    stay_offline()
    import datasets

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    try:
        if kind == "arrow":
            ds = datasets.load_from_disk(str(path))
        elif kind == "hub":
            ds = datasets.load_dataset(spec, split=split)
        else:
            options = {"delimiter": "\t"} if path.suffix.lower() == ".tsv" else {}
            ds = datasets.load_dataset(kind, data_files=str(path), split="train", **options)
    except FileNotFoundError as exc:
        raise InputError(f"{spec}: {exc}") from None
    except Exception as exc:  # datasets raises many types for unreadable files
        cause: BaseException = exc
        while cause.__cause__ is not None and type(cause).__name__ == "DatasetGenerationError":  # says only "failed"
            cause = cause.__cause__
        reason = in_one_line(cause, 300)
        raise InputError(f"{spec}: datasets could not read it: {type(cause).__name__}: {reason}") from None
    if isinstance(ds, datasets.DatasetDict):
        names = list(ds)
        chosen = split or ("train" if "train" in ds else names[0])
        if chosen not in ds:
            raise InputError(f"{spec}: no split {chosen!r} (splits: {', '.join(names)})")
        ds = ds[chosen]
    return ds
