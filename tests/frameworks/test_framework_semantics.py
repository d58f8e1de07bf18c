"""Version-dependent schedules against the real framework, and the rows preflight hands to the schedule."""

from __future__ import annotations

import json

import pytest

from support import CORPUS, FIXTURES, QWEN25, needs_corpus

GOLDEN = FIXTURES / "configs" / "transformers-4-warmup-golden.json"


def simulate(tmp_path, config: dict, rows: int, transformers_version: str | None):
    from mldebug_cli.frameworks import read_spec, versions
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate as run
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    loaded = load_config(path)
    targets = versions.resolve(str(path), {"transformers": transformers_version})
    return run(loaded, read_spec(loaded, "transformers", 1, targets), from_num_rows(rows))


@pytest.mark.parametrize("case", json.loads(GOLDEN.read_text())["cases"], ids=lambda c: c["name"])
def test_a_transformers_4_target_schedules_warmup_ratio_as_the_real_4x_trainer(tmp_path, case):
    """Golden: a real transformers 4.57 Trainer run (tools/transformers4_warmup_golden.py), step for step."""
    version = json.loads(GOLDEN.read_text())["versions"]["transformers"]
    sim = simulate(tmp_path, case["config"], case["rows"], version)
    assert sim.plan.total_steps == case["max_steps"] and sim.plan.warmup_steps == case["warmup_steps"]
    assert sim.spec.ignored == () if "warmup_steps" not in case["config"] else sim.spec.ignored[0].key == "warmup_ratio"
    assert sim.lrs == pytest.approx(case["lrs"], rel=1e-9, abs=1e-15)


def test_the_same_warmup_ratio_is_ignored_on_transformers_5_2_and_replaces_warmup_steps_on_5_0(tmp_path):
    config = {"learning_rate": 1e-3, "per_device_train_batch_size": 4, "num_train_epochs": 1, "warmup_ratio": 0.5,
              "warmup_steps": 3}
    newest = simulate(tmp_path, config, 64, "5.23.0")
    assert newest.plan.warmup_steps == 3 and [i.key for i in newest.spec.ignored] == ["warmup_ratio"]
    five_zero = simulate(tmp_path, config, 64, "5.0.0")  # __post_init__ copies warmup_ratio over warmup_steps
    assert five_zero.plan.warmup_steps == 8 and [i.key for i in five_zero.spec.ignored] == ["warmup_steps"]
    four = simulate(tmp_path, config, 64, "4.57.6")  # get_warmup_steps: warmup_steps > 0 wins
    assert four.plan.warmup_steps == 3 and [i.key for i in four.spec.ignored] == ["warmup_ratio"]


def test_a_fractional_warmup_steps_is_a_count_before_transformers_5(tmp_path):
    config = {"learning_rate": 1e-3, "per_device_train_batch_size": 4, "num_train_epochs": 1, "warmup_steps": 0.1}
    assert simulate(tmp_path, config, 400, "5.23.0").plan.warmup_steps == 10
    old = simulate(tmp_path, config, 400, "4.57.6")
    assert old.plan.warmup_steps == 0 and "step count" in old.spec.ignored[0].reason


@needs_corpus
def test_llama_factory_max_samples_caps_each_dataset_on_its_own(tmp_path):
    """LLaMA-Factory 0.9.5 data/loader.py _load_single_dataset: 91 + 999 + 300 rows under max_samples 1000."""
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    config = tmp_path / "lf.yaml"
    config.write_text(
        f"model_name_or_path: {QWEN25}\nstage: sft\ndo_train: true\nfinetuning_type: lora\n"
        "dataset: identity,alpaca_en_demo,glaive_toolcall_en_demo\n"
        f"dataset_dir: {CORPUS / 'datasets' / 'llama-factory'}\ntemplate: qwen\ncutoff_len: 2048\n"
        "max_samples: 1000\nper_device_train_batch_size: 1\ngradient_accumulation_steps: 8\n"
        "learning_rate: 1.0e-4\nnum_train_epochs: 3.0\nlr_scheduler_type: cosine\nwarmup_ratio: 0.1\n"
    )
    result = CliRunner().invoke(app, ["preflight", str(config), "--allow-outside-paths", "--sample", "5",
                                      "--transformers-version", "4.57.6", "-f", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    schedule = next(s for s in json.loads(result.stdout)["sections"] if s["command"] == "lr-plot")
    assert schedule["train_rows"] == 1390  # not 1,000: each dataset is capped on its own
    assert schedule["total_optimizer_steps"] == 3 * 174 and schedule["warmup_steps"] == 53  # ceil(0.1 * 522)
    assert "91 + 999 + 300" in schedule["context"]["dataset"]
    assert "transformers 4.57.6 (--transformers-version)" in schedule["context"]["versions"]


def test_max_samples_caps_a_single_count_as_before():
    from mldebug_cli.schedule.arithmetic import rows_after_max_samples
    from mldebug_cli.schedule.dataset_size import DatasetSize

    assert rows_after_max_samples(DatasetSize(5000, "--num-rows"), 1000) == 1000
    assert rows_after_max_samples(DatasetSize(1390, "x", per_dataset=(91, 999, 300)), 100) == 291


def _axolotl_preflight(tmp_path, packing: bool):
    import shutil

    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    shutil.copy(FIXTURES / "preflight" / "axolotl" / "train_fixed.jsonl", tmp_path / "train.jsonl")
    config = tmp_path / "axolotl.yml"
    config.write_text(
        f"base_model: {QWEN25}\ndatasets:\n  - path: train.jsonl\n    type: chat_template\n"
        f"sequence_len: 64\nsample_packing: {str(packing).lower()}\nmicro_batch_size: 1\n"
        "gradient_accumulation_steps: 1\nnum_epochs: 1\nlearning_rate: 0.0002\nwarmup_steps: 0\n"
    )
    result = CliRunner().invoke(app, ["preflight", str(config), "--all", "--allow-outside-paths", "-f", "json",
                                      "--exit-zero"])
    assert result.exit_code == 0, result.output
    sections = json.loads(result.stdout)["sections"]
    return sections[0], next(s for s in sections if s["command"] == "lr-plot")


def test_rows_axolotl_drops_for_length_leave_the_step_count(tmp_path):
    data, schedule = _axolotl_preflight(tmp_path, packing=False)
    dropped = data["summary"]["rows_dropped"]
    assert dropped > 0 and data["summary"]["rows"] == 24
    assert schedule["train_rows"] == 24 - dropped and schedule["total_optimizer_steps"] == 24 - dropped


def test_packing_is_estimated_from_the_token_lengths_preflight_measured(tmp_path):
    data, schedule = _axolotl_preflight(tmp_path, packing=True)
    kept = 24 - data["summary"]["rows_dropped"]
    [estimate] = [f for f in schedule["findings"] if f["code"] == "LR012"]  # axolotl's multipack is not emulated
    assert (f"best fit decreasing over the real lengths of {kept} rows in sequences of 64, a packer filling 90% at worst"
            in estimate["message"])
