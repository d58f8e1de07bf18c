"""A Parquet file's row groups sized from its footer before any is read.

pyarrow (and datasets, which reads through it) decompresses a whole column chunk of a row group at once: a file of
a few KB can declare a row group of gigabytes (1.5 GB of repeated text compresses to 60 KB with zstd), and a row
group of a billion null rows costs gigabytes of offsets once in memory though it is small on disk. The footer says
both before any page is read, so a row group over the bound is a one-line error naming the file and the group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

from mldebug_cli.core.errors import InputError

MIB = 2**20
MAX_ROW_GROUP_BYTES = 512 * MIB  # uncompressed, as the footer declares it
MAX_ROW_GROUP_ROWS = 2**24
MAX_COLUMNS = 10_000  # leaf columns (the CSV datasets' bound)
MAX_FOOTER_BYTES = 64 * MIB
_HINT = "rewrite it with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=10_000)"


def check_parquet_footer(source: IO[bytes], shown: str) -> None:
    """Every row group of the Parquet file open as ``source`` within the bounds; ``shown`` names it in the error.

    The footer is read here, not through pyarrow's metadata objects: pyarrow 26 aborts the whole process (a C++
    exception no caller can catch) when Python asks for a column chunk's metadata whose level histograms disagree
    with the schema, where its own readers raise an error for the same file."""
    try:
        schema_columns, groups = _footer(source)
    except (_Malformed, OSError) as exc:
        raise InputError(f"{shown}: not a readable Parquet file ({exc})") from None
    columns = max([schema_columns, *(group[2] for group in groups)])
    if columns > MAX_COLUMNS:
        raise InputError(f"{shown}: {columns:,} columns; mldebug reads datasets of up to {MAX_COLUMNS:,}")
    for index, (size, rows, _) in enumerate(groups):
        if size > MAX_ROW_GROUP_BYTES or rows > MAX_ROW_GROUP_ROWS:
            raise InputError(f"{shown}: row group {index} declares {size:,} bytes uncompressed in {rows:,} "
                             f"rows; mldebug reads row groups of up to {MAX_ROW_GROUP_BYTES // MIB} MiB and "
                             f"{MAX_ROW_GROUP_ROWS:,} rows", hint=_HINT)


class _Malformed(ValueError):
    pass


def _footer(fh: IO[bytes]) -> tuple[int, list[tuple[int, int, int]]]:
    """The schema's leaf columns and (declared uncompressed bytes, rows, columns) of each row group, from the file's
    Thrift footer. The bytes are the larger of the group's total_byte_size and the sum of its column chunks'
    total_uncompressed_size."""
    fh.seek(0, 2)
    end = fh.tell()
    if end < 12:
        raise _Malformed("shorter than a Parquet file's header and footer")
    fh.seek(end - 8)
    tail = fh.read(8)
    if tail[4:] != b"PAR1":
        raise _Malformed("encrypted footer" if tail[4:] == b"PARE" else "no PAR1 magic at its end")
    length = int.from_bytes(tail[:4], "little")
    if length > min(end - 12, MAX_FOOTER_BYTES):
        raise _Malformed(f"its footer declares {length:,} bytes")
    fh.seek(end - 8 - length)
    reader = _Compact(fh.read(length))
    groups: list[tuple[int, int, int]] = []
    leaves = [0]

    def schema_element(element: dict) -> None:
        leaves[0] += 5 not in element  # a leaf column has no num_children (5)

    def column_chunk(chunk: dict) -> int:
        meta = chunk.get(3)
        return meta.get(6, 0) if isinstance(meta, dict) else 0

    def row_group(group: dict) -> None:
        columns = group.get(1, [])
        groups.append((max(group.get(2, 0), sum(columns)), group.get(3, 0), len(columns)))

    # FileMetaData {schema (2) -> SchemaElement {num_children (5)}, row_groups (4) -> RowGroup {columns (1) ->
    # ColumnChunk {meta_data (3) -> total_uncompressed_size (6)}, total_byte_size (2), num_rows (3)}}: only these
    # are kept, every other value is skipped
    reader.struct({2: ({5: None}, schema_element), 4: ({1: ({3: {6: None}}, column_chunk), 2: None, 3: None}, row_group)})
    return leaves[0], groups


class _Compact:
    """Thrift's compact protocol, read from a bytes buffer: only the fields a plan names are kept."""

    _FIXED = {1: 0, 2: 0, 3: 1, 7: 8}  # bool-true, bool-false (in the field header), byte, double: bytes to skip
    _INTS = (4, 5, 6)  # i16, i32, i64: zigzag varints
    _MAX_DEPTH = 64

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        if self.at >= len(self.data):
            raise _Malformed("its footer ends inside a value")
        self.at += 1
        return self.data[self.at - 1]

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise _Malformed("its footer holds an integer of more than 64 bits")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def struct(self, plan: dict, depth: int = 0) -> dict:
        """The struct's planned fields of the planned type (any other value is skipped): an int for a None plan, a
        dict for a dict plan, and for a (plan, handler) pair the list of its struct elements' handler results."""
        if depth > self._MAX_DEPTH:
            raise _Malformed("its footer nests deeper than Thrift allows")
        kept: dict = {}
        field = 0
        while (header := self.byte()) != 0:
            kind, delta = header & 0x0F, header >> 4
            field = field + delta if delta else self.zigzag()
            want = plan.get(field, False)  # None: an integer; a dict: a struct; a (plan, handler) pair: a list
            if want is None and kind in self._INTS:
                kept[field] = self.zigzag()
            elif isinstance(want, dict) and kind == 12:
                kept[field] = self.struct(want, depth + 1)
            elif isinstance(want, tuple) and kind == 9:
                element_plan, handler = want
                kept[field] = self._list(element_plan, handler, depth + 1)
            else:
                self.skip(kind, depth + 1)
        return kept

    def _list(self, plan: dict, handler: Callable[[dict], object], depth: int) -> list:
        size, kind = self._list_header()
        out = []
        for _ in range(size):
            if kind != 12:
                self.skip(kind, depth)
                continue
            element = self.struct(plan, depth)
            result = handler(element)
            if result is not None:
                out.append(result)
        return out

    def _list_header(self) -> tuple[int, int]:
        header = self.byte()
        size = header >> 4 if header >> 4 != 15 else self.varint()
        if size > len(self.data) - self.at:  # every element takes at least one byte
            raise _Malformed(f"its footer declares a list of {size:,} items in fewer bytes")
        return size, header & 0x0F

    def _skip_element(self, kind: int, depth: int) -> None:
        """A collection's element: a bool there is a whole byte, not part of a field header."""
        if kind in (1, 2):
            self.byte()
        else:
            self.skip(kind, depth)

    def skip(self, kind: int, depth: int) -> None:
        if depth > self._MAX_DEPTH:
            raise _Malformed("its footer nests deeper than Thrift allows")
        if kind in self._FIXED:
            self.at += self._FIXED[kind]
        elif kind in self._INTS:
            self.varint()
        elif kind == 8:
            length = self.varint()  # read before self.at is: the varint moves it
            self.at += length
        elif kind in (9, 10):
            size, element = self._list_header()
            for _ in range(size):
                self._skip_element(element, depth + 1)
        elif kind == 11:
            size = self.varint()
            if size > len(self.data) - self.at:
                raise _Malformed(f"its footer declares a map of {size:,} items in fewer bytes")
            if size:
                types = self.byte()
                for _ in range(size):
                    self._skip_element(types >> 4, depth + 1)
                    self._skip_element(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct({}, depth + 1)
        else:
            raise _Malformed(f"its footer holds an unknown Thrift type {kind}")
        if self.at > len(self.data):
            raise _Malformed("its footer ends inside a value")
