"""Issue 36 item 1: a Parquet file's row groups are sized from its footer before any is read. A 60 KB file whose one
row group decompresses to 629 MB, or a row group of 17 million rows, is one line naming the file and the group,
as one file, as a shard, and under the Ray engine's planner; nothing is decompressed (the peak stays small)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mldebug_cli.sources.parquet_bounds import MAX_ROW_GROUP_ROWS
from outcomes import assert_one_line_error, run_cli, run_cli_process, unchanged
from support import QWEN25

HINT = "rewrite it with smaller row groups, e.g. pyarrow.parquet.write_table(table, path, row_group_size=10_000)"


def _huge_row_group(path):
    """60 rows of 10 MiB of text each, in one row group, zstd-compressed to ~25 KB: built from one 10 MiB buffer."""
    chat = pa.array([[{"role": "user", "content": "x" * (10 * 2**20)}, {"role": "assistant", "content": "4"}]])
    pq.write_table(pa.table({"messages": pa.chunked_array([chat] * 60)}), path, row_group_size=1000,
                   compression="zstd")
    group = pq.ParquetFile(path).metadata.row_group(0)
    assert path.stat().st_size < 200_000 and group.num_rows == 60
    return group.total_byte_size


def test_a_row_group_that_decompresses_to_gigabytes_is_refused_from_its_footer(tmp_path):
    path = tmp_path / "bomb.parquet"
    size = _huge_row_group(path)
    with unchanged(path):
        code, _, stderr, peak = run_cli_process("inspect-data", path, "-t", QWEN25)
    assert_one_line_error(code, stderr, f"{path}: row group 0 declares {size:,} bytes uncompressed in 60 rows; mldebug "
                          f"reads row groups of up to 512 MiB and {MAX_ROW_GROUP_ROWS:,} rows", HINT)
    assert peak is None or peak < 1024, peak


def test_the_same_row_group_as_a_shard_is_one_error_naming_the_shard(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    shard = folder / "part-0.parquet"
    size = _huge_row_group(shard)
    result = run_cli("inspect-data", folder, "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr, f"{folder}: no shard can be read ({shard}: row group 0 "
                          f"declares {size:,} bytes uncompressed in 60 rows; mldebug reads row groups of up to 512 MiB "
                          f"and {MAX_ROW_GROUP_ROWS:,} rows)")


@pytest.mark.slow
def test_a_row_group_of_millions_of_rows_is_refused(tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"text": pa.array([None] * (MAX_ROW_GROUP_ROWS + 1), pa.string())}), path,
                   row_group_size=MAX_ROW_GROUP_ROWS + 1)
    result = run_cli("inspect-data", path, "-t", QWEN25)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: row group 0 declares ")
    assert f"in {MAX_ROW_GROUP_ROWS + 1:,} rows" in result.stderr
