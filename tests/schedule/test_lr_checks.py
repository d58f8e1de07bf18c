"""Each LR check fires on the config that has its problem, with the severity and place the catalogue gives."""

from __future__ import annotations

import json

import pytest
from lr_helpers import FIXTURE_CONFIGS

BASE = {"learning_rate": 1e-3, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 2,
        "num_train_epochs": 2, "warmup_steps": 2, "logging_steps": 1, "lr_scheduler_type": "linear"}


@pytest.fixture
def findings(simulate_config):
    from mldebug_cli.core import registry

    def run(config, rows=40, **kwargs):
        simulation = simulate_config(config, rows, **kwargs)
        checks = [registry.load(ref) for ref in registry.selected(family="LR")]
        return [f for check in checks for f in check.findings(simulation, None)]

    return run


def codes(found):
    return {f.code: f for f in found}


def test_a_sound_config_has_no_warning_or_error(findings):
    found = findings(BASE)
    assert {f.severity.value for f in found} <= {"info"}
    assert set(codes(found)) == {"LR003"}  # linear warmup starts at LR 0


def test_lr001_warmup_longer_than_training_names_the_highest_lr(findings):
    finding = codes(findings({**BASE, "warmup_steps": 40}))["LR001"]  # T = 20
    assert finding.severity.value == "error"
    assert "highest LR reached is 0.000475" in finding.message and "step 20" in finding.message
    assert finding.location.key == "warmup_steps" and finding.location.line == 1


@pytest.mark.parametrize("warmup,severity", [(11, "warning"), (0, "info"), (6, "info"), (3, None)])
def test_lr002_warmup_share(findings, warmup, severity):
    config = {**BASE, "warmup_steps": warmup, "num_train_epochs": 5}  # T = 50
    finding = codes(findings(config)).get("LR002")
    assert (finding.severity.value if finding else None) == severity


def test_lr003_is_absent_when_warmup_starts_above_zero(findings):
    config = {**BASE, "lr_scheduler_type": "cosine_warmup_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.1}}
    assert "LR003" not in codes(findings(config))


@pytest.mark.parametrize(
    "config,key,words",
    [
        ({**BASE, "warmup_steps": 0, "warmup_ratio": 0.1}, "warmup_ratio", "removed in 5.15"),
        ({**BASE, "lr_scheduler_type": "constant_with_warmup", "lr_scheduler_kwargs": {"num_cycles": 2}},
         "lr_scheduler_kwargs", "passes no kwargs"),
        ({**BASE, "lr_scheduler_type": "reduce_lr_on_plateau", "eval_strategy": "epoch"}, "warmup_steps",
         "takes no warmup"),
    ],
)
def test_lr004_ignored_keys(findings, config, key, words):
    finding = codes(findings(config))["LR004"]
    assert finding.location.key == key and words in finding.message


def test_lr005_missing_kwargs_and_not_lr015(findings):
    found = codes(findings({**BASE, "lr_scheduler_type": "warmup_stable_decay"}))
    assert "num_decay_steps" in found["LR005"].message and "LR015" not in found


@pytest.mark.parametrize(
    "config,rows,framework,words",
    [
        ({**BASE, "per_device_train_batch_size": 8, "dataloader_drop_last": True}, 7, None, "do not fill one batch"),
        ({**BASE, "num_train_epochs": 0}, 40, None, "0 epochs"),
    ],
)
def test_lr006_no_optimizer_steps(findings, config, rows, framework, words):
    finding = codes(findings(config, rows))["LR006"]
    assert finding.severity.value == "error" and words in finding.message


def test_lr006_torchtune_floor_of_a_short_epoch(findings):
    config = {"optimizer": {"_component_": "torch.optim.AdamW", "lr": 1e-4}, "batch_size": 4,
              "gradient_accumulation_steps": 8, "epochs": 2}
    assert "only steps on full windows" in codes(findings(config, rows=20))["LR006"].message


def test_lr007_max_steps_gives_the_epochs_run(findings):
    finding = codes(findings({**BASE, "max_steps": 15}))["LR007"]  # 10 steps per epoch
    assert "after 1.5 epochs" in finding.message and finding.location.key == "max_steps"


def test_lr008_default_logging_interval(findings):
    config = {k: v for k, v in BASE.items() if k != "logging_steps"}
    finding = codes(findings(config))["LR008"]
    assert "logging every 500 steps on a run of 20" in finding.message


def test_lr010_partial_window(findings):
    finding = codes(findings({**BASE, "gradient_accumulation_steps": 3}))["LR010"]  # 20 micro-batches
    assert "only 2 micro-batches" in finding.message


def test_lr011_deepspeed_scheduler_block(simulate_config):
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    config = load_config(FIXTURE_CONFIGS / "hf_deepspeed_zero2.json")
    simulation = simulate(config, read_spec(config, None, 1), from_num_rows(1000))
    [finding] = registry.load(registry.lookup("LR011")).findings(simulation, None)
    assert "WarmupLR" in finding.message and finding.location.key == "deepspeed"


def test_lr012_packing_range_from_text(tmp_path, findings):
    from mldebug_cli.core import registry
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.schedule.dataset_size import count_dataset
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"text": "word " * 400}) + "\n" for _ in range(100)))
    config_path = tmp_path / "sft.json"
    config_path.write_text(json.dumps({**BASE, "packing": True, "max_length": 1024}))
    config = load_config(config_path)
    spec = read_spec(config, None, 1)
    assert spec.framework == "trl"
    simulation = simulate(config, spec, count_dataset(str(data), spec.packing.sequence_len))
    low, high = simulation.plan.total_steps_range
    assert low < simulation.plan.total_steps < high
    [finding] = registry.load(registry.lookup("LR012")).findings(simulation, None)
    assert f"between {low} and {high} optimizer steps" in finding.message


def test_lr012_packing_with_tokenized_rows_is_exact_tokens(tmp_path):
    from mldebug_cli.schedule.dataset_size import count_dataset, packed_rows

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"input_ids": list(range(300))}) + "\n" for _ in range(64)))
    size = count_dataset(str(data), 1024)
    assert size.tokens_exact and size.token_range == (64 * 300, 64 * 300)
    packed = packed_rows(size, 1024)
    assert packed.low == 19 and packed.low <= packed.estimate <= packed.high <= 64


def test_lr013_constant_ignores_warmup(findings):
    finding = codes(findings({**BASE, "lr_scheduler_type": "constant"}))["LR013"]
    assert finding.severity.value == "warning" and finding.location.key == "warmup_steps"


def test_lr014_plateau_without_evaluation_is_an_error(findings):
    config = {**BASE, "lr_scheduler_type": "reduce_lr_on_plateau", "warmup_steps": 0}
    assert codes(findings(config))["LR014"].severity.value == "error"
    assert codes(findings({**config, "eval_strategy": "epoch"}))["LR014"].severity.value == "info"


@pytest.mark.parametrize(
    "config,words",
    [
        ({**BASE, "lr_scheduler_type": "cosine", "lr_scheduler_kwargs": {"min_lr": 1e-6}}, "cannot be built"),
        ({**BASE, "lr_scheduler_type": "polynomial", "warmup_steps": 20}, "after optimizer step 20"),
    ],
)
def test_lr015_scheduler_fails(findings, config, words):
    finding = codes(findings(config))["LR015"]
    assert finding.severity.value == "error" and words in finding.message


def test_every_lr_check_is_documented():
    from mldebug_cli.core import registry

    for ref in registry.selected(family="LR"):
        check = registry.load(ref)
        for heading in ("What it finds", "Why it matters for training", "Example", "Fix"):
            assert heading in check.doc, (ref.code, heading)
