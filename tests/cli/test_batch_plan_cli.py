"""The batch plan through the commands: inspect-data --step, check-run --config (rows behind a flagged step),
memory's peak batch on several ranks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, ROOT, RUNS

runner = CliRunner()
TRL = FIXTURES / "preflight" / "trl" / "config_fixed.yaml"  # 24 rows, batch 4, accumulation 2, seed 42
POISONED = RUNS / "sft-poisoned-row"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def run(*args):
    return runner.invoke(app, [*map(str, args)], catch_exceptions=False)


def test_step_shows_the_rows_the_trainers_sampler_puts_in_that_step():
    torch = pytest.importorskip("torch")
    generator = torch.Generator()
    generator.manual_seed(42)  # accelerate's SeedableRandomSampler: seed + epoch 0
    order = torch.randperm(24, generator=generator).tolist()
    result = run("inspect-data", "--config", TRL, "--step", 2, "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert sorted(r["row"] for r in doc["rows"]) == sorted(order[8:16])  # micro-batches 3 and 4 of 4 rows
    assert doc["context"]["step 2 (epoch 1)"] == ("micro-batch 1: " + ", ".join(map(str, order[8:12])) +
                                                  "; micro-batch 2: " + ", ".join(map(str, order[12:16])))
    assert doc["summary"]["rows_checked"] == 8


def test_step_on_two_ranks_lists_each_ranks_micro_batches():
    result = run("inspect-data", "--config", TRL, "--step", 1, "--world-size", 2, "-f", "json", "--exit-zero")
    doc = json.loads(result.stdout)
    assert "step 1 (epoch 1), rank 0" in doc["context"] and "step 1 (epoch 1), rank 1" in doc["context"]
    assert len(doc["rows"]) == 16 and "2 ranks" in doc["context"]["batch plan"]


@pytest.mark.parametrize("args, words", [
    (("--step", 4), "step 4 is past the end of the run (3 optimizer steps)"),
    (("--step", 0), "--step must be 1 or more"),
])
def test_a_step_outside_the_run_is_a_one_line_error(args, words):
    result = run("inspect-data", "--config", TRL, *args)
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_step_needs_a_config(tmp_path):
    result = run("inspect-data", FIXTURES / "preflight" / "trl" / "train.jsonl", "-t",
                 FIXTURES / "tokenizers" / "qwen2.5-instruct", "--step", 1)
    assert result.exit_code == 2 and "--step needs --config" in result.output


def test_check_run_names_the_poisoned_row_behind_the_real_runs_spike():
    made = json.loads((RUNS / "VERSIONS.json").read_text())["scenarios"]["sft-poisoned-row"]
    result = run("check-run", POISONED / "trainer_state.json", "--config", POISONED / "config.yaml", "-f", "json",
                 "--exit-zero")
    doc = json.loads(result.stdout)
    spike = next(f for f in doc["findings"] if f["code"] == "RN003")
    assert spike["location"]["step"] == made["poisoned_step"]  # the real Trainer reached the row where the plan says
    behind = next(b for b in doc["batches"] if b["code"] == "RN003" and b["step"] == made["poisoned_step"])
    row = next(r for r in behind["rows"] if r["row"] == made["poisoned_row"])
    line = (POISONED / "train.jsonl").read_text().splitlines()[row["line"] - 1]
    assert row["line"] == made["poisoned_row"] + 1 and "#" in json.loads(line)["text"]
    text = run("check-run", POISONED / "trainer_state.json", "--config", POISONED / "config.yaml", "--exit-zero")
    assert f"RN003 step {made['poisoned_step']} (epoch 1): rows {made['poisoned_row']} (line " in text.output


def test_check_run_without_config_names_no_rows():
    doc = json.loads(run("check-run", POISONED / "trainer_state.json", "-f", "json", "--exit-zero").stdout)
    assert "batches" not in doc and doc["context"]["batch_plan"] is None


def test_check_run_says_why_a_config_it_cannot_plan_names_no_rows(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text((POISONED / "config.yaml").read_text().replace("dataset_name: train.jsonl",
                                                                     f"dataset_name: {POISONED / 'train.jsonl'}")
                      + "packing: true\n")
    doc = json.loads(run("check-run", POISONED / "trainer_state.json", "--config", config, "-f", "json",
                         "--exit-zero").stdout)
    assert "batches" not in doc and "packs rows into sequences" in doc["context"]["batch_plan"]


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_memorys_peak_batch_is_named_at_its_step_on_every_rank_count(world_size):
    torch = pytest.importorskip("torch")
    generator = torch.Generator()
    generator.manual_seed(42)
    order = torch.randperm(40, generator=generator).tolist()  # 40 rows, row 27 the long one, batch 8
    index = order.index(27) // 8  # its micro-batch in the epoch; accelerate deals them round-robin to the ranks
    result = run("memory", FIXTURES / "memory" / "sft_long_row.yaml", "--model",
                 FIXTURES / "memory-models" / "qwen2.5-0.5b", "--world-size", world_size, "-f", "json", "--exit-zero")
    doc = json.loads(result.stdout)
    assert 27 in doc["batch"]["rows"] and doc["batch"]["step"] == index // world_size + 1
