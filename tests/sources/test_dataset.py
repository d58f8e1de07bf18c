"""Reading dataset files: rows with their lines, bad lines as records, other formats through datasets."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.dataset import DatasetSource
from support import ALPACA, AXOLOTL_CONVERSATION, GLAIVE, needs_corpus, write_jsonl


@needs_corpus
def test_json_array_rows_know_their_first_line():
    source = DatasetSource(str(ALPACA))
    assert source.kind == "json" and len(source) == 999
    first, second = list(source.records([0, 1]))
    assert (first.line, second.line) == (2, 7)
    text = ALPACA.read_text().splitlines()
    assert text[second.line - 1].strip() == "{"
    assert json.loads(ALPACA.read_text())[1] == second.data


@needs_corpus
def test_sampled_records_come_in_order_with_their_indices():
    source = DatasetSource(str(GLAIVE))
    assert [r.index for r in source.records([250, 3, 7])] == [3, 7, 250]


@needs_corpus
def test_a_single_pretty_printed_object_is_one_row():
    source = DatasetSource(str(AXOLOTL_CONVERSATION))
    records = list(source.records())
    assert len(records) == 1 and "conversations" in records[0].data and records[0].line == 1


def test_jsonl_bad_lines_become_records_with_their_line(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"text": "a"}\n\n{"text": \n\xff\xfe{"text": "b"}\n{"text": "c"}\n')
    records = list(DatasetSource(str(path)).records())
    assert [(r.index, r.line) for r in records] == [(0, 1), (1, 3), (2, 4), (3, 5)]
    assert records[1].error.startswith("invalid JSON") and "UTF-8" in records[2].error
    assert records[3].data == {"text": "c"}


def test_raw_records_parse_to_the_same_records(tmp_path):
    """records(parse=False) hands out raw lines (parsed in worker processes); parsed() must give what records() gives."""
    path = tmp_path / "d.jsonl"
    deep = json.dumps({"meta": json.loads("[" * 120 + "]" * 120)})
    path.write_bytes(b'{"text": "a"}\n\n{"text": \n\xff\xfe{"text": "b"}\n' + deep.encode() + b"\n" + b'{"text": "[[{{"}\n')
    source = DatasetSource(str(path))
    raw = list(source.records(parse=False))
    assert all(r.raw is not None and r.data is None for r in raw)
    assert [r.parsed() for r in raw] == list(source.records())
    assert [r.parsed() for r in source.records([1, 4], parse=False)] == list(source.records([1, 4]))
    assert "nested more than 100 levels" in raw[3].parsed().error


def test_deeply_nested_line_is_a_record_error_not_a_crash(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n" + '{"text": "ok"}\n')
    records = list(DatasetSource(str(path)).records())
    assert records[0].error and records[1].data == {"text": "ok"}


@needs_corpus
@pytest.mark.parametrize("suffix", ["parquet", "csv", "arrow-folder"])
def test_other_formats_load_with_datasets(tmp_path, suffix):
    import datasets

    rows = json.loads(ALPACA.read_text())[:20]
    ds = datasets.Dataset.from_list(rows)
    if suffix == "parquet":
        target = tmp_path / "d.parquet"
        ds.to_parquet(str(target))
    elif suffix == "csv":
        target = tmp_path / "d.csv"
        ds.to_csv(str(target), index=False)
    else:
        target = tmp_path / "saved"
        ds.save_to_disk(str(target))
    source = DatasetSource(str(target))
    assert len(source) == 20
    got = list(source.records([0, 19]))
    assert [r.index for r in got] == [0, 19]
    assert got[1].data["instruction"] == rows[19]["instruction"] and got[1].line is None
    assert [r.data["output"] for r in source.records()] == [r["output"] for r in rows]


def test_missing_and_unsupported_inputs(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        DatasetSource(str(tmp_path / "missing.jsonl"))
    (tmp_path / "d.txt").write_text("x")
    with pytest.raises(InputError, match="unsupported file type"):
        DatasetSource(str(tmp_path / "d.txt"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(InputError, match="save_to_disk"):
        DatasetSource(str(tmp_path / "plain"))


def test_files_are_never_written(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [{"text": "a"}])
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    list(DatasetSource(str(path)).records())
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
