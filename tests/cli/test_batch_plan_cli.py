"""The batch plan through the commands: inspect-data --step, check-run --config (rows behind a flagged step),
memory's peak batch on several ranks."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
    (("--step", 0), "--step must be from 1 to 1,000,000,000,000, got 0"),
])
def test_a_step_outside_the_run_is_a_one_line_error(args, words):
    result = run("inspect-data", "--config", TRL, *args)
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


def test_step_needs_a_config(tmp_path):
    result = run("inspect-data", FIXTURES / "preflight" / "trl" / "train.jsonl", "-t",
                 FIXTURES / "tokenizers" / "qwen2.5-instruct", "--step", 1)
    assert result.exit_code == 2 and "--step needs --config" in result.output


# The poisoned step's loss is 2.03x the mean of the steps before it, but the run's first steps fall from 11.9 to 2.2,
# so their spread hides it from RN003's default 6-sigma rule: the tests lower sigma, as a user's [tool.mldebug] can.
SPIKE_THRESHOLDS = {"RN003": {"sigma": 1.5}}


def poisoned_report(config=POISONED / "config.yaml"):
    from mldebug_cli.pipelines.check_run import build_report

    return build_report(str(POISONED / "trainer_state.json"), config=str(config), thresholds=SPIKE_THRESHOLDS)


def test_check_run_names_the_poisoned_row_behind_the_real_runs_spike():
    import io

    from mldebug_cli.formats import render_report

    made = json.loads((RUNS / "VERSIONS.json").read_text())["scenarios"]["sft-poisoned-row"]
    report = poisoned_report()
    spike = next(f for f in report.findings if f.code == "RN003")
    assert spike.location.step == made["poisoned_step"]  # the real Trainer reached the row where the plan put it
    behind = next(b for b in report.details["batches"] if b["code"] == "RN003" and b["step"] == made["poisoned_step"])
    assert [r["row"] for r in behind["rows"]] == [made["poisoned_row"]]  # batch 1, no accumulation: that row alone
    line = (POISONED / "train.jsonl").read_text().splitlines()[behind["rows"][0]["line"] - 1]
    assert behind["rows"][0]["line"] == made["poisoned_row"] + 1 and "#" in json.loads(line)["text"]
    assert made["poisoned_row"] not in {r["row"] for b in report.details["batches"] if b["step"] != made["poisoned_step"]
                                        for r in b["rows"]}
    stream = io.StringIO()
    render_report(report, "text", stream)
    text = stream.getvalue()
    assert f"RN003 step {made['poisoned_step']} (epoch 1): rows {made['poisoned_row']} (line " in text


def test_check_run_without_config_names_no_rows():
    doc = json.loads(run("check-run", POISONED / "trainer_state.json", "-f", "json", "--exit-zero").stdout)
    assert "batches" not in doc and doc["context"]["batch_plan"] is None


def test_check_run_says_why_a_config_it_cannot_plan_names_no_rows(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text((POISONED / "config.yaml").read_text().replace("dataset_name: train.jsonl",
                                                                     f"dataset_name: {POISONED / 'train.jsonl'}")
                      + "packing: true\n")
    report = poisoned_report(config)
    assert "batches" not in report.details and "packs rows into sequences" in report.context["batch_plan"]


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


LLAMA_FACTORY = FIXTURES / "preflight" / "llama-factory"  # 2 datasets; shop_identity has 20 alpaca rows


def llama_factory_config(tmp_path, **keys) -> str:
    """LLaMA-Factory's example config on one dataset, without max_samples (what the batch plan replays)."""
    text = (LLAMA_FACTORY / "config.yaml").read_text()
    text = text.replace("dataset: shop_identity,shop_tools", "dataset: shop_identity").replace("max_samples: 1000\n", "")
    text = text.replace("dataset_dir: data", f"dataset_dir: {LLAMA_FACTORY / 'data'}")
    text = text.replace("model_name_or_path: ../../tokenizers/qwen2.5-instruct",
                        f"model_name_or_path: {FIXTURES / 'tokenizers' / 'qwen2.5-instruct'}")
    text += "".join(f"{key}: {value}\n" for key, value in keys.items())
    path = tmp_path / "lf.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize("keys, order", [
    ({}, "shuffled"),  # the Trainer's seeded shuffle (seed 42)
    ({"disable_shuffling": "true", "seed": 7}, "in order"),  # LLaMA-Factory's SequentialSampler
])
def test_step_of_a_llama_factory_config_is_its_trainers_batch(tmp_path, keys, order):
    from mldebug_cli.schedule.batch_plan import shuffled_order

    result = run("inspect-data", "--config", llama_factory_config(tmp_path, **keys), "--step", 2, "-f", "json",
                 "--exit-zero", "--allow-outside-paths")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    rows = shuffled_order(20, 42) if order == "shuffled" else list(range(20))
    # batch 1, accumulation 8: step 2 is micro-batches 9-16 (fixtures/batch-plan/llamafactory-0.9.5.jsonl checks the rule)
    assert [r["row"] for r in doc["rows"]] == sorted(rows[8:16])
    assert doc["context"]["step 2 (epoch 1)"] == "; ".join(f"micro-batch {i + 1}: {r}" for i, r in enumerate(rows[8:16]))
    assert "rows LLaMA-Factory keeps" in doc["context"]["batch plan"]


@pytest.mark.parametrize("config, words", [
    (LLAMA_FACTORY / "config.yaml", "2 datasets are merged (concat) before the sampler"),
    (FIXTURES / "preflight" / "axolotl" / "config_fixed.yml", "the config sets no seed: axolotl shuffles the merged "
                                                              "rows with numpy's unseeded global generator"),
])
def test_a_plan_mldebug_cannot_name_rows_for_is_refused_by_name(config, words):
    result = run("inspect-data", "--config", config, "--step", 1)
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_check_run_names_the_rows_behind_a_spike_of_a_llama_factory_run(tmp_path):
    """A spike at step 5 (epoch 2 of 3 steps each): the rows of that step's 8 micro-batches in epoch 2's order."""
    from mldebug_cli.schedule.batch_plan import shuffled_order

    logs = [{"step": s, "epoch": s / 3, "loss": 9.0 if s == 5 else 2.0 - 0.01 * s, "grad_norm": 1.0,
             "learning_rate": 1e-4} for s in range(1, 10)]
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": logs, "global_step": 9, "max_steps": 9, "logging_steps": 1}))
    result = run("check-run", state, "--config", llama_factory_config(tmp_path), "-f", "json", "--exit-zero")
    doc = json.loads(result.stdout)
    (spike,) = [b for b in doc["batches"] if b["code"] == "RN003"]
    assert (spike["step"], spike["epoch"]) == (5, 1)
    assert [r["row"] for r in spike["rows"]] == shuffled_order(20, 42, epoch=1)[8:16]
    assert "rows LLaMA-Factory keeps" in doc["context"]["batch_plan"]


AXOLOTL = FIXTURES / "preflight" / "axolotl"


def axolotl_config(tmp_path, datasets: int = 1, **keys) -> str:
    """The preflight axolotl config over its 24 clean rows (absolute paths), with ``keys`` added."""
    text = (AXOLOTL / "config_fixed.yml").read_text()
    text = text.replace("base_model: ../../tokenizers/qwen2.5-instruct",
                        f"base_model: {FIXTURES / 'tokenizers' / 'qwen2.5-instruct'}")
    text = text.replace("path: train_fixed.jsonl", f"path: {AXOLOTL / 'train_fixed.jsonl'}")
    if datasets > 1:
        text = text.replace("datasets:\n", f"datasets:\n  - path: {AXOLOTL / 'train_fixed.jsonl'}\n    type: chat_template\n")
    text += "".join(f"{key}: {value}\n" for key, value in keys.items())
    path = tmp_path / "axolotl.yml"
    path.write_text(text)
    return str(path)


def test_step_of_an_axolotl_config_is_its_sampler_over_its_prepared_rows(tmp_path):
    """axolotl shuffles the rows with datasets' numpy permutation (seed 3) before its trainer's seeded sampler
    (fixtures/batch-plan/axolotl-0.19.0-prepare.jsonl and axolotl-0.19.0.jsonl hold each part to axolotl's code)."""
    np = pytest.importorskip("numpy")
    from mldebug_cli.schedule.batch_plan import shuffled_order

    assert "path: train_fixed.jsonl" in (AXOLOTL / "config_fixed.yml").read_text()
    result = run("inspect-data", "--config", axolotl_config(tmp_path, seed=3), "--step", 2, "-f", "json",
                 "--exit-zero", "--allow-outside-paths")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    prepared = np.random.default_rng(3).permutation(24).tolist()
    order = shuffled_order(24, 3)  # micro-batches of 2, 2 per step: step 2 is sampler positions 4 to 7
    assert doc["context"]["step 2 (epoch 1)"] == (f"micro-batch 1: {prepared[order[4]]}, {prepared[order[5]]}; "
                                                  f"micro-batch 2: {prepared[order[6]]}, {prepared[order[7]]}")
    assert sorted(r["row"] for r in doc["rows"]) == sorted(prepared[i] for i in order[4:8])
    assert "rows shuffled (seed 3)" in doc["context"]["prepared rows"]
    assert "24 rows reach the sampler" in doc["context"]["prepared rows"]


def test_step_of_an_axolotl_config_leaves_out_the_rows_its_length_filter_drops(tmp_path):
    result = run("inspect-data", "--config", axolotl_config(tmp_path, seed=3, sequence_len=64, sample_packing="true"),
                 "--step", 1, "-f", "json", "--exit-zero", "--allow-outside-paths")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    reached = int(doc["context"]["prepared rows"].split(": ")[-1].split(" rows")[0])
    assert 0 < reached < 24 and doc["rows"]
    assert all(2 <= len(r["input_ids"]) <= 64 and not r["truncated_from"] for r in doc["rows"])


@pytest.mark.parametrize("datasets, keys, words", [
    (2, {"seed": 3}, "the config merges 2 datasets"),
    (1, {"seed": 3, "excess_length_strategy": "truncate"}, "excess_length_strategy truncate"),
    (1, {"seed": 3, "dataset_exact_deduplication": "true"}, "dataset_exact_deduplication"),
])
def test_an_axolotl_preparation_mldebug_does_not_replay_is_refused_by_name(tmp_path, datasets, keys, words):
    result = run("inspect-data", "--config", axolotl_config(tmp_path, datasets, **keys), "--step", 1,
                 "--allow-outside-paths")
    assert result.exit_code == 2 and words in result.output and "Traceback" not in result.output


CONFIG_PLAN = FIXTURES / "batch-plan" / "axolotl-0.19.0-config-plan.json"


@pytest.mark.slow
@pytest.mark.parametrize("variant", range(3))
def test_every_step_of_an_axolotl_config_is_its_sampler_over_axolotls_own_prepared_rows(tmp_path, variant):
    """End to end: the rows mldebug names for each step are axolotl's sampler (held to its trainer by the
    axolotl-batch-plan goldens) over the rows axolotl's own prepare_datasets hands it (tools/axolotl_config_plan_golden.py:
    the real chat_template encoding, shuffle, length filter, eval split), with axolotl's token counts for packing."""
    import yaml

    from mldebug_cli.frameworks.axolotl.batch_plan import axolotl_plan, sampling_of_config

    golden = json.loads(CONFIG_PLAN.read_text())["variants"][variant]
    config = yaml.safe_load((AXOLOTL / "config_fixed.yml").read_text())
    config.update(golden["keys"])
    config["base_model"] = str(FIXTURES / "tokenizers" / "qwen2.5-instruct")
    config["datasets"][0]["path"] = str(AXOLOTL / "train_fixed.jsonl")
    path = tmp_path / "axolotl.yml"
    path.write_text(yaml.safe_dump(config))
    plan = axolotl_plan(sampling_of_config(config, golden["lengths"], 1))
    rows = golden["prepared_rows"]
    for step in range(1, plan.total_steps + 1):
        planned = plan.step(step)
        assert planned is not None
        result = run("inspect-data", "--config", path, "--step", step, "-f", "json", "--exit-zero", "--allow-outside-paths")
        assert result.exit_code == 0, result.output
        listed = json.loads(result.stdout)["context"][f"step {step} (epoch {planned.epoch + 1})"]
        assert listed == "; ".join(f"micro-batch {i + 1}: " + ", ".join(str(rows[p]) for p in batch)
                                   for i, batch in enumerate(planned.micro_batches[0])), f"step {step}"


def axolotl_spike_state(tmp_path, spike: int, steps: int) -> str:
    """A trainer_state.json whose loss spikes at ``spike`` of ``steps`` optimizer steps (logged every step)."""
    logs = [{"step": s, "epoch": s / steps, "loss": 9.0 if s == spike else 2.0 - 0.01 * s, "grad_norm": 1.0,
             "learning_rate": 1e-4} for s in range(1, steps + 1)]
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": logs, "global_step": steps, "max_steps": steps, "logging_steps": 1}))
    return str(state)


def axolotl_expected_epoch(seed: int, val_set_size: float, micro_batch_size: int) -> list[list[int]]:
    """The first epoch's micro-batches (file rows) of the preflight axolotl config's 24 rows, all within
    sequence_len 1024, computed here from the two shuffles themselves: datasets' ``Dataset.shuffle(seed)`` (numpy's
    ``default_rng(seed).permutation``), the ``val_set_size`` rows split off the end, then the Trainer's seeded
    sampler (``shuffled_order``, held to torch's ``randperm`` by the batch-plan goldens)."""
    import math

    import numpy as np

    from mldebug_cli.schedule.batch_plan import shuffled_order

    prepared = np.random.default_rng(seed).permutation(24).tolist()
    held = int(val_set_size) if val_set_size >= 1 else math.ceil(val_set_size * 24)
    train = prepared[:24 - held]
    order = [train[i] for i in shuffled_order(len(train), seed)]
    return [order[i:i + micro_batch_size] for i in range(0, len(order), micro_batch_size)]


@pytest.mark.slow
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1), micro=st.integers(1, 2), accumulation=st.integers(1, 2),
       val_set_size=st.sampled_from([0.0, 0.25, 3]), spike_at=st.integers(0, 99))
def test_check_run_and_memory_name_an_axolotl_configs_rows_as_its_preparation_and_sampler_order_them(
        tmp_path_factory, seed, micro, accumulation, val_set_size, spike_at):
    """Generated axolotl configs over the preflight example's 24 rows: ``check-run --config`` names the rows behind a
    loss spike, and ``memory`` its peak batch, from axolotl's merged-row shuffle then its trainer's sampler (before,
    both took the Trainer's sampler over the file's rows)."""
    tmp_path = tmp_path_factory.mktemp("axolotl")
    epoch = axolotl_expected_epoch(seed, val_set_size, micro)
    per_step = [epoch[i:i + accumulation] for i in range(0, len(epoch), accumulation)]
    spike = 5 + spike_at % (len(per_step) - 5)  # RN003 needs steps before the spike and one after it
    config = axolotl_config(tmp_path, seed=seed, micro_batch_size=micro, gradient_accumulation_steps=accumulation,
                            val_set_size=val_set_size, sequence_len=1024, num_epochs=1)
    result = run("check-run", axolotl_spike_state(tmp_path, spike, len(per_step)), "--config", config, "-f", "json",
                 "--exit-zero")
    doc = json.loads(result.stdout)
    assert "axolotl's preparation: rows shuffled (seed " in doc["context"]["batch_plan"], doc["context"]
    (behind,) = [b for b in doc["batches"] if b["code"] == "RN003" and b["step"] == spike]
    assert [r["row"] for r in behind["rows"]] == [row for batch in per_step[spike - 1] for row in batch]
    assert all(r["line"] == r["row"] + 1 for r in behind["rows"])
    result = run("memory", config, "--model", FIXTURES / "memory-models" / "qwen2.5-0.5b", "-f", "json",
                 "--exit-zero", "--allow-outside-paths")
    doc = json.loads(result.stdout)
    peak = doc["batch"]
    assert peak["rows"] in epoch and peak["step"] == epoch.index(peak["rows"]) // accumulation + 1
    assert "axolotl's preparation" in doc["context"]["batch order"]


@pytest.mark.slow
def test_check_run_and_memory_say_why_an_axolotl_config_without_seed_names_no_rows_or_step(tmp_path):
    """The bundled example sets no seed: axolotl shuffles its merged rows with numpy's unseeded generator."""
    config = axolotl_config(tmp_path)
    result = run("check-run", axolotl_spike_state(tmp_path, 3, 6), "--config", config, "-f", "json", "--exit-zero")
    doc = json.loads(result.stdout)
    assert "batches" not in doc and "the config sets no seed" in doc["context"]["batch_plan"]
    result = run("memory", config, "--model", FIXTURES / "memory-models" / "qwen2.5-0.5b", "-f", "json",
                 "--exit-zero", "--allow-outside-paths")
    doc = json.loads(result.stdout)
    assert doc["batch"]["step"] is None and "the config sets no seed" in doc["context"]["batch order"]
    assert "no step is named" in doc["context"]["batch order"]
