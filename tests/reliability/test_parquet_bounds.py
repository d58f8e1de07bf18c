"""Issue 36 item 1: a Parquet file's row groups are sized from its footer before any is read. A 60 KB file whose one
row group decompresses to 629 MB, or a row group of 17 million rows, is one line naming the file and the group,
as one file, as a shard, and under the Ray engine's planner; nothing is decompressed (the peak stays small)."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.parquet_bounds import MAX_ROW_GROUP_ROWS, check_parquet_footer
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


def test_a_string_value_that_is_not_utf8_is_a_finding_on_its_row_and_the_rest_are_checked(tmp_path):
    """Found by CI's fuzzing: a Parquet string column holding bytes that are not UTF-8 made datasets' conversion
    raise UnicodeDecodeError through the whole command. Now the one row is named and the others are checked."""
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"text": pa.array([b"ok", b"\x85bad", b"fine"], pa.binary()).view(pa.string())}), path)
    with unchanged(path):
        result = run_cli("inspect-data", path, "-t", QWEN25, "-f", "json")
    assert result.exit_code == 1, result.stderr
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert [(f["code"], f["location"]["row"]) for f in report["findings"]] == [("DS010", 1)]
    assert report["findings"][0]["message"].startswith("the row cannot be decoded (UnicodeDecodeError: 'utf-8' codec")
    assert (report["summary"]["rows_checked"], report["summary"]["rows_failed"], report["summary"]["tokens"]) == (3, 1, 4)


def test_a_footer_whose_level_histograms_disagree_is_an_error_not_an_abort(tmp_path):
    """Found by fuzzing: pyarrow 26 aborts the process (an uncaught C++ ParquetException) when Python asks for a
    column chunk's metadata whose repetition-level histogram has the wrong size. mldebug sizes row groups from the
    footer itself, and pyarrow's reader then raises an ordinary error for the file: a finding, never an abort."""
    path = tmp_path / "levels.parquet"
    chat = [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]
    pq.write_table(pa.table({"messages": [chat] * 3}), path)
    data = path.read_bytes()
    footer_length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - footer_length:-8]
    histogram = b"\x19\x26\x06\x06\x19"  # SizeStatistics.repetition_level_histogram: a list of two i64 (3, 3)
    if histogram not in footer:  # a pyarrow that writes no level histograms (SizeStatistics): nothing to change
        pytest.skip(f"pyarrow {pa.__version__} wrote no level histogram to change")
    footer = footer.replace(histogram, b"\x19\x36\x06\x06\x00\x19", 1)  # three entries where the schema allows two
    path.write_bytes(data[:-8 - footer_length] + footer + len(footer).to_bytes(4, "little") + b"PAR1")
    code, stdout, stderr, _ = run_cli_process("inspect-data", path, "-t", QWEN25)
    assert code in (1, 2), (code, stderr)  # -6 (SIGABRT) before the footer was read here
    assert "Traceback" not in stderr and "terminate called" not in stderr, stderr
    assert "histogram size mismatch" in stdout + stderr


@settings(max_examples=300, deadline=None)
@given(edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.integers(0, 40))
def test_a_footer_with_any_bytes_changed_is_read_or_refused_in_one_line(edits, cut):
    """The footer reader sees bytes a fuzzer or a PR chose: any change to a real footer (a byte set, the end cut)
    gives the row groups or a one-line InputError, never another exception (fuzzing found a TypeError here)."""
    footer_length = int.from_bytes(_CHAT_PARQUET[-8:-4], "little")
    footer = bytearray(_CHAT_PARQUET[-8 - footer_length:-8])
    for at, value in edits:
        footer[at % len(footer)] = value
    footer = footer[:len(footer) - cut]
    data = _CHAT_PARQUET[:-8 - footer_length] + bytes(footer) + len(footer).to_bytes(4, "little") + b"PAR1"
    try:
        check_parquet_footer(io.BytesIO(data), "chat.parquet")
    except InputError as exc:
        assert exc.message.startswith("chat.parquet: ") and "\n" not in exc.message


def _chat_parquet() -> bytes:
    out = io.BytesIO()
    chat = [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]
    pq.write_table(pa.table({"messages": [chat] * 8, "id": list(range(8))}), out, row_group_size=3,
                   write_page_index=True)
    return out.getvalue()


_CHAT_PARQUET = _chat_parquet()
