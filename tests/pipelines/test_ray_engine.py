"""--engine ray gives the in-process report, row for row, on a local Ray cluster this module starts (2 CPUs):
planted and generated datasets, multi-shard Parquet with a JSON Lines shard and an unreadable shard, the corpus
datasets, a killed worker (Ray restarts it, the report is the same), and a worker that dies past its retries."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.formats.json_format import report_document
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.pipelines.ray_engine import local_priority
from support import (
    CORPUS,
    FIXTURES,
    QWEN25,
    ROOT,
    generated_chat,
    needs_corpus,
    no_ray_executor_left,
    write_chat_shards,
    write_jsonl,
)

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a local Ray cluster and 10^4-row datasets: the slow tier (docs/testing.md)
GENERATED_ROWS = 10_000  # 10^5 takes minutes on 2 shared cores: benchmarks/bench_ray.py runs it


@pytest.fixture(scope="module", autouse=True)
def cluster():
    # the memory monitor kills workers when the whole machine is short of memory (a shared CI box), not ours
    os.environ.setdefault("RAY_memory_monitor_refresh_ms", "0")
    local_priority()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="warning")
    yield
    ray.shutdown()


@pytest.fixture(autouse=True)
def executors_end_with_their_test():
    yield
    no_ray_executor_left()


def same_reports(options: InspectOptions) -> dict:
    """The in-process and the Ray report of ``options`` as JSON, asserted equal but for the engine line."""
    local = report_document(build_report(replace(options, workers=1)))
    on_ray = report_document(build_report(replace(options, engine="ray", ray_concurrency=2)))
    assert on_ray["context"].pop("engine").startswith("ray (Ray Data, up to 2 actors")
    assert "engine" not in local["context"]
    assert on_ray == local
    return local


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """10^4 generated rows in 9 shards (one of them JSON Lines), and a corrupt Parquet shard in the middle."""
    folder = write_chat_shards(tmp_path_factory.mktemp("shards"), GENERATED_ROWS, 9, row_group_size=700, jsonl_every=4)
    (folder / "part-00004b.parquet").write_bytes(b"PAR1 this is not a parquet file")
    return folder


@pytest.fixture(scope="module")
def shards_options(shards):
    return InspectOptions(dataset=str(shards), tokenizer=str(QWEN25), all_rows=True, max_length=512, workers=1)


@pytest.fixture(scope="module")
def shards_report(shards_options):
    """The in-process report on the shards (made once: two tests compare with it)."""
    return report_document(build_report(shards_options))


def test_planted_rows_give_the_same_report(tmp_path):
    rows = [generated_chat(i) for i in range(300)]
    rows[5] = {"messages": [{"role": "user", "text": "no content key"}]}
    path = write_jsonl(tmp_path / "planted.jsonl", rows)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("{not json\n\n" + json.dumps(generated_chat(301)) + "\n")
    doc = same_reports(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True, max_length=256))
    codes = doc["summary"]["by_check"]
    assert codes["DS010"] >= 3 and len(codes) >= 3
    assert next(f["location"] for f in doc["findings"] if f["location"].get("row") == 300)["line"] == 301


def test_sharded_parquet_gives_the_same_report_with_rows_numbered_across_shards(shards_options, shards_report):
    on_ray = report_document(build_report(replace(shards_options, engine="ray", ray_concurrency=2)))
    assert on_ray["context"].pop("engine") == "ray (Ray Data, up to 2 actors, cluster local)"
    assert on_ray == shards_report
    doc = shards_report
    assert doc["summary"]["rows_checked"] == GENERATED_ROWS
    unreadable = [f for f in doc["findings"] if f["location"]["path"].endswith("part-00004b.parquet")]
    assert len(unreadable) == 1 and "the shard cannot be read" in unreadable[0]["message"]
    missing = [f for f in doc["findings"] if f["code"] == "DS010" and "row" in f["location"]]
    assert [f["location"]["row"] for f in missing][:3] == [0, 97, 194]  # every 97th row's reply is null
    in_jsonl = next(f["location"] for f in missing if f["location"]["path"].endswith(".jsonl"))
    assert in_jsonl["line"] == in_jsonl["row"] - 3 * 1112 + 1  # rows 3336.. are lines 1.. of the fourth shard


def test_a_sample_of_a_glob_gives_the_same_report(shards):
    same_reports(InspectOptions(dataset=str(shards / "part-0000[0-2].parquet"), tokenizer=str(QWEN25), sample=50))


@needs_corpus
@pytest.mark.parametrize("dataset, options", [
    ("datasets/llama-factory/alpaca_en_demo.json", {"framework": "llama-factory"}),
    ("datasets/llama-factory/dpo_en_demo.json", {"framework": "llama-factory", "task": "dpo"}),
    ("datasets/axolotl/conversation.json", {"framework": "axolotl"}),
])
def test_corpus_datasets_give_the_same_report(dataset, options):
    same_reports(InspectOptions(dataset=str(CORPUS / dataset), tokenizer=str(QWEN25), all_rows=True, **options))


def test_preference_rows_give_the_same_report():
    same_reports(InspectOptions(dataset=str(FIXTURES / "trl-1.16.0-preference" / "rows_dpo_conversational.json"),
                                tokenizer=str(QWEN25), all_rows=True, max_length=64))


def _without_ray_engine(value):
    """``value`` with every engine line of --engine ray left out (preflight has one per data section)."""
    if isinstance(value, dict):
        return {k: _without_ray_engine(v) for k, v in value.items()
                if not (k == "engine" and str(v).startswith("ray (Ray Data"))}
    if isinstance(value, list):
        return [_without_ray_engine(v) for v in value]
    return value


def test_preflight_gives_the_same_report(monkeypatch):
    from mldebug_cli.pipelines.preflight import PreflightOptions
    from mldebug_cli.pipelines.preflight import build_report as preflight

    monkeypatch.chdir(ROOT)
    options = PreflightOptions(config=str(FIXTURES / "preflight" / "trl" / "config.yaml"), all_rows=True)
    local = report_document(preflight(options))
    on_ray = report_document(preflight(replace(options, engine="ray")))
    assert on_ray != local and _without_ray_engine(on_ray) == local
    assert local["summary"]["by_check"].get("DS011") == 1


def _kill_a_pool_actor(stop: threading.Event) -> list[int]:
    """SIGKILL the first actor of the pool seen checking a batch (its process title names the UDF and the method)."""
    import psutil

    killed: list[int] = []

    def hunt():
        while not stop.is_set() and not killed:
            for proc in psutil.process_iter(["pid", "cmdline"]):
                if "MapBatches(_BatchWorker)).submit" in " ".join(proc.info["cmdline"] or ()):
                    os.kill(proc.info["pid"], signal.SIGKILL)
                    killed.append(proc.info["pid"])
                    break
            time.sleep(0.05)

    threading.Thread(target=hunt, daemon=True, name="test-actor-hunt").start()
    return killed


def test_a_killed_worker_is_restarted_and_the_report_is_the_same(shards_options, shards_report):
    stop = threading.Event()
    killed = _kill_a_pool_actor(stop)
    try:
        on_ray = report_document(build_report(replace(shards_options, engine="ray", ray_concurrency=2)))
    finally:
        stop.set()
    assert killed, "no actor of the pool was seen to kill"
    on_ray["context"].pop("engine")
    assert on_ray == shards_report


def test_a_worker_that_dies_past_its_retries_is_one_error(monkeypatch, tmp_path):
    from mldebug_cli.pipelines import ray_engine

    monkeypatch.setattr(ray_engine, "ACTOR_RESTARTS", 0)
    # rows enough that the pool is still checking when the hunt finds an actor on a loaded machine (with 3,000 the
    # run was seen to end first in a slow tier beside another; the kill stops it early either way)
    path = write_chat_shards(tmp_path / "few", 12000, 6)
    stop = threading.Event()
    killed = _kill_a_pool_actor(stop)
    try:
        with pytest.raises(InputError, match="a Ray worker died while checking rows"):
            build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True, engine="ray"))
    finally:
        stop.set()
    assert killed


def test_cli_prints_the_same_json_on_stdout_and_names_an_unreachable_cluster(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [generated_chat(i) for i in range(100)])
    base = [sys.executable, "-m", "mldebug_cli", "inspect-data", str(path), "-t", str(QWEN25), "--all",
            "--output-format", "json", "--exit-zero"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    local = subprocess.run(base, capture_output=True, text=True, env=env, check=True)
    address = ray.get_runtime_context().gcs_address
    on_ray = subprocess.run([*base, "--engine", "ray", "--ray-address", address], capture_output=True, text=True,
                            env=env, check=True)
    doc = json.loads(on_ray.stdout)
    assert doc["context"].pop("engine").endswith(f"cluster {address})")
    assert doc == json.loads(local.stdout)
    gone = subprocess.run([*base, "--engine", "ray", "--ray-address", "127.0.0.1:9"], capture_output=True, text=True,
                          env=env)
    assert gone.returncode == 2 and gone.stdout == ""
    assert gone.stderr.splitlines()[0] == "Error: cannot reach the Ray cluster at 127.0.0.1:9: [Errno 111] Connection refused"


def test_train_eval_overlap_is_the_same_on_ray(tmp_path):
    """--eval-dataset: the training rows stream past the eval index on Ray's actors; the same findings."""
    pytest.importorskip("datasketch")
    train = [generated_chat(i) for i in range(3_000)]
    write_jsonl(tmp_path / "train.jsonl", train)
    near = json.loads(json.dumps(train[1_234]))
    near["messages"][-1]["content"] = (near["messages"][-1]["content"] or "") + " extra"
    write_jsonl(tmp_path / "eval.jsonl", [train[7], train[2_999], near, {"messages": [
        {"role": "user", "content": "a row of its own"}, {"role": "assistant", "content": "not in training"}]}])
    local = same_reports(InspectOptions(dataset=str(tmp_path / "train.jsonl"), tokenizer=str(QWEN25), sample=20,
                                        eval_dataset=str(tmp_path / "eval.jsonl"), select=("DS053", "DS054")))
    found = {(f["code"], f["location"]["row"]) for f in local["findings"]}
    assert {("DS053", 0), ("DS053", 1)} <= found and not {r for _, r in found} & {3}


@pytest.mark.parametrize("dataset", ["trl_vision_sft.jsonl", "trl_vision_dpo.jsonl"])
def test_image_rows_give_the_same_report(dataset):
    """Image rows (TRL SFT and DPO) on Ray: every row's images read in the actors, the same findings and views."""
    vision = FIXTURES / "datasets" / "vision"
    doc = same_reports(InspectOptions(dataset=str(vision / dataset), tokenizer=str(FIXTURES / "processors" / "qwen2-vl"),
                                      all_rows=True, max_length=300, show=10))
    assert {"DS031", "DS032", "DS033", "DS036"} <= set(doc["summary"]["by_check"])
    assert any(image for row in doc["rows"] for image in row.get("images", ()))
