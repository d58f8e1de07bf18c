"""Issue 36 items 4 and 5: a ``**`` glob does not follow links to folders (``x -> .`` made it exponential) and reads
nothing a link takes outside its folder; a remote URI is read only when the network was asked for, and a client
that gets no answer gives up with one line instead of retrying for 15 minutes."""

from __future__ import annotations

import json
import time

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.shards import list_shards
from outcomes import assert_one_line_error, run_cli, run_cli_process
from support import QWEN25

ROW = {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]}


def _loops(folder, links: int = 6):
    """A dataset folder holding ``links`` committable links to itself (a glob that follows them visits 6^depth)."""
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.jsonl").write_text(json.dumps(ROW) + "\n")
    for i in range(links):
        (folder / f"x{i}").symlink_to(".")
        (folder / "sub" / f"y{i}").symlink_to("..")
    return folder


def test_a_double_star_glob_does_not_follow_links_to_folders(tmp_path):
    folder = _loops(tmp_path / "d")
    started = time.monotonic()
    assert list_shards(f"{folder}/**/*.jsonl") == [str(folder / "sub" / "a.jsonl")]
    assert list_shards(str(folder)) == [str(folder / "sub" / "a.jsonl")]
    assert time.monotonic() - started < 30  # following the links: 6 links, 2 levels each, exponential


def test_the_cli_reads_a_looping_glob_once_and_ends(tmp_path):
    folder = _loops(tmp_path / "d")
    code, stdout, stderr, _ = run_cli_process("inspect-data", f"{folder}/**/*.jsonl", "-t", QWEN25, "-f", "json",
                                              timeout=120)
    assert code in (0, 1), stderr
    assert json.loads(stdout)["summary"]["rows"] == 1


def test_glob_patterns_match_as_glob_does(tmp_path):
    for name in ("part-0.jsonl", "part-1.jsonl", "other.jsonl", "deep/part-2.jsonl", "deep/x/part-3.parquet"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(json.dumps(ROW) + "\n")
    assert list_shards(f"{tmp_path}/part-[0-9].jsonl") == [f"{tmp_path}/part-0.jsonl", f"{tmp_path}/part-1.jsonl"]
    assert list_shards(f"{tmp_path}/*.jsonl") == [f"{tmp_path}/{n}" for n in ("other.jsonl", "part-0.jsonl",
                                                                               "part-1.jsonl")]
    assert list_shards(f"{tmp_path}/**/part-*") == [f"{tmp_path}/{n}" for n in (
        "deep/part-2.jsonl", "deep/x/part-3.parquet", "part-0.jsonl", "part-1.jsonl")]


def test_a_shard_that_links_outside_the_glob_folder_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text(json.dumps(ROW) + "\n")
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(ROW) + "\n")
    (folder / "b.jsonl").symlink_to(outside / "secret.jsonl")
    with pytest.raises(InputError, match=r"b.jsonl: a link to .*secret.jsonl, outside the folder"):
        list_shards(f"{folder}/**/*.jsonl")
    result = run_cli("inspect-data", str(folder), "-t", QWEN25)
    assert result.exit_code == 2 and "outside the folder" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("uri", ["gs://no-such-bucket/data/*.parquet", "s3://no-such-bucket/train",
                                 "hdfs://namenode:8020/data"])
def test_a_remote_uri_is_offline_unless_asked(uri, monkeypatch):
    monkeypatch.delenv("MLDEBUG_ONLINE", raising=False)
    result = run_cli("inspect-data", uri, "-t", QWEN25)
    scheme = uri.split("://")[0]
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{uri}: a {scheme}:// dataset needs the network, and mldebug runs offline",
                          "pass --online (or set MLDEBUG_ONLINE=1) to read it")


def test_gs_with_the_network_asked_for_but_none_there_gives_up_in_time(tmp_path):
    """With --online and no answer (this machine reaches no storage service), one line within the time limit
    (lowered to 3 s here), never pyarrow's 15 minutes of retries."""
    started = time.monotonic()
    code, _, stderr, _ = run_cli_process("inspect-data", "gs://no-such-bucket-mldebug/data", "-t", QWEN25, "--online",
                                         prelude="import mldebug_cli.sources.shards as s; s.REMOTE_TIMEOUT_SECONDS = 3",
                                         timeout=120)
    assert code == 2 and "Traceback" not in stderr, stderr
    assert [line for line in stderr.splitlines() if line.startswith("Error:")][0].startswith(
        "Error: gs://no-such-bucket-mldebug/data: ")
    assert time.monotonic() - started < 90
