"""A Parquet file's row groups sized from its footer before any is read.

pyarrow (and datasets, which reads through it) decompresses a whole column chunk of a row group at once: a file of
a few KB can declare a row group of gigabytes (1.5 GB of repeated text compresses to 60 KB with zstd), and a row
group of a billion null rows costs gigabytes of offsets once in memory though it is small on disk. The footer says
both before any page is read, so a row group over the bound is a one-line error naming the file and the group.
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from mldebug_cli.core.errors import InputError

if TYPE_CHECKING:
    from pyarrow.parquet import FileMetaData

MIB = 2**20
MAX_ROW_GROUP_BYTES = 512 * MIB  # uncompressed, as the footer declares it
MAX_ROW_GROUP_ROWS = 2**24
MAX_COLUMNS = 10_000  # leaf columns (the CSV datasets' bound)
_HINT = "rewrite it with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=10_000)"


def check_parquet_footer(source: str | IO[bytes], shown: str) -> None:
    """Every row group of the Parquet file ``source`` within the bounds; ``shown`` names it in the error."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(source).metadata
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a file that is not Parquet
        raise InputError(f"{shown}: not a readable Parquet file ({' '.join(str(exc).split())[:200]})") from None
    check_row_groups(meta, shown)


def check_row_groups(meta: FileMetaData, shown: str) -> None:
    """The footer's row groups and columns within the bounds; else a one-line error naming ``shown``."""
    if meta.num_columns > MAX_COLUMNS:
        raise InputError(f"{shown}: {meta.num_columns:,} columns; mldebug reads datasets of up to {MAX_COLUMNS:,}")
    for index in range(meta.num_row_groups):
        group = meta.row_group(index)
        size = max(group.total_byte_size, sum(group.column(c).total_uncompressed_size for c in range(group.num_columns)))
        if size > MAX_ROW_GROUP_BYTES or group.num_rows > MAX_ROW_GROUP_ROWS:
            raise InputError(f"{shown}: row group {index} declares {size:,} bytes uncompressed in {group.num_rows:,} "
                             f"rows; mldebug reads row groups of up to {MAX_ROW_GROUP_BYTES // MIB} MiB and "
                             f"{MAX_ROW_GROUP_ROWS:,} rows", hint=_HINT)
