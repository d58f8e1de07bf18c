"""A folder, glob or URI of Parquet / JSON Lines shards is one dataset: rows numbered across the shards, each
record naming its shard and line, chunks that read the same records as the whole file, an unreadable shard set
aside with its reason."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.shards import ShardedSource, is_sharded, open_dataset, plan_shards, scan_shard
from support import generated_chat, write_chat_shards, write_jsonl


def _plain(records):
    return [(r.index, r.line, r.data, r.error) for r in records]


def test_a_folder_of_shards_is_one_dataset_numbered_in_name_order(tmp_path):
    folder = write_chat_shards(tmp_path / "data", 2500, 3, row_group_size=300, jsonl_every=2)
    source = open_dataset(str(folder))
    assert isinstance(source, ShardedSource) and len(source) == 2500
    records = list(source.records())
    assert [r.index for r in records] == list(range(2500))
    assert [r.data for r in records] == [generated_chat(i) for i in range(2500)]
    jsonl = [r for r in records if r.path.endswith("part-00001.jsonl")]
    assert (jsonl[0].index, jsonl[0].line, jsonl[-1].line) == (834, 1, 834)
    assert all(r.line is None for r in records if r.path.endswith(".parquet"))


def test_a_glob_picks_its_shards_and_a_sample_reads_only_its_rows(tmp_path):
    folder = write_chat_shards(tmp_path, 3000, 3)
    source = open_dataset(str(folder / "part-0000[12].parquet"))
    assert len(source) == 2000
    assert [(r.index, r.data) for r in source.records([0, 999, 1000, 1999])] == [
        (0, generated_chat(1000)), (999, generated_chat(1999)), (1000, generated_chat(2000)), (1999, generated_chat(2999))]


def test_chunks_read_what_the_whole_file_reads(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [generated_chat(i) for i in range(50)])
    text = path.read_text().splitlines(keepends=True)
    path.write_text("".join(text[:10]) + "\n{broken\n" + "".join(text[10:]))  # a blank line, then a bad one
    whole = _plain(r.parsed() for r in DatasetSource(str(path)).records(parse=False))
    plan = plan_shards(str(path), lambda shards: [scan_shard(s, chunk_rows=7) for s in shards])
    assert len(plan.chunks) == 8
    assert _plain(r.parsed() for r in ShardedSource(str(path), plan).records(parse=False)) == whole
    assert whole[10][:2] == (10, 12) and whole[10][3].startswith("invalid JSON")


def test_parquet_shards_read_what_datasets_reads(tmp_path):
    path = tmp_path / "rows.parquet"
    rows = [generated_chat(i) for i in range(40)] + [{"messages": None}]
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=16)
    assert _plain(ShardedSource(str(path)).records()) == _plain(DatasetSource(str(path)).records())


def test_a_uri_is_read_through_pyarrow_filesystems(tmp_path):
    write_chat_shards(tmp_path, 1200, 2, jsonl_every=2)
    source = open_dataset(f"file://{tmp_path}")
    assert is_sharded(f"file://{tmp_path}") and len(source) == 1200
    assert [r.data for r in source.records([0, 1199])] == [generated_chat(0), generated_chat(1199)]


def test_an_unreadable_shard_is_set_aside_and_the_others_are_read(tmp_path):
    write_chat_shards(tmp_path, 2000, 2)
    (tmp_path / "part-00000b.parquet").write_bytes(b"PAR1 not parquet")
    (tmp_path / "part-00000c.jsonl").write_bytes(b"\x00\x01binary")
    plan = ShardedSource(str(tmp_path)).plan
    assert plan.rows == 2000
    assert [(u.shard.rsplit("/", 1)[-1], u.reason.split(":")[0]) for u in plan.unreadable] == [
        ("part-00000b.parquet", "not a readable Parquet file (no PAR1 magic at its end)"),
        ("part-00000c.jsonl", "ValueError")]


def test_a_folder_without_shards_is_one_error(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    assert not is_sharded(str(tmp_path))
    with pytest.raises(InputError, match="no Parquet"):
        len(open_dataset(str(tmp_path / "*.parquet")))
    with pytest.raises(InputError, match="not one written by datasets' save_to_disk"):
        open_dataset(str(tmp_path))


def test_a_shard_cut_short_after_the_scan_gives_error_records_for_the_rows_left(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [generated_chat(i) for i in range(20)])
    plan = plan_shards(str(path))
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:15]))
    records = list(ShardedSource(str(path), plan).records())
    assert [r.index for r in records] == list(range(20))
    assert [r.error for r in records[:15]] == [None] * 15
    assert records[15].error == "the shard cannot be read from here on (EOFError: the file ends before line 16)"
