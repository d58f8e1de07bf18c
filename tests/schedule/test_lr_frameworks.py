"""Each framework's keys, defaults and step counting, read from the frameworks' own example configs."""

from __future__ import annotations

import math

import pytest
from lr_helpers import FIXTURE_CONFIGS


def config_line(name: str, key: str) -> int:
    lines = (FIXTURE_CONFIGS / name).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if line.startswith(f"{key}:"))


def simulate_fixture(name, rows, world_size=1, framework=None, engine="auto"):
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    config = load_config(FIXTURE_CONFIGS / name)
    return simulate(config, read_spec(config, framework, world_size), from_num_rows(rows), engine)


@pytest.mark.parametrize(
    "name,framework",
    [
        ("hf_training_args.json", "transformers"),
        ("hf_training_args.yaml", "transformers"),
        ("trl_open_r1_sft_demo.yaml", "trl"),
        ("trl_open_r1_distill_qwen3_8b.yaml", "trl"),
        ("axolotl_llama3_lora_1b.yml", "axolotl"),
        ("llama_factory_llama3_lora_sft.yaml", "llama-factory"),
        ("torchtune_llama3_2_1B_lora_single_device.yaml", "torchtune"),
    ],
)
def test_framework_is_detected(name, framework):
    from mldebug_cli.frameworks import detect_framework
    from mldebug_cli.sources.config_file import load_config

    assert detect_framework(load_config(FIXTURE_CONFIGS / name)) == framework


def test_json_and_yaml_training_arguments_give_the_same_schedule():
    from_json = simulate_fixture("hf_training_args.json", 1000)
    from_yaml = simulate_fixture("hf_training_args.yaml", 1000)
    assert from_json.schedule == from_yaml.schedule
    assert from_json.plan.warmup_steps == math.ceil(0.1 * from_json.plan.total_steps)  # a ratio, rounded up


def test_trl_defaults_differ_from_training_arguments(simulate_config):
    simulation = simulate_config({"packing": False, "num_train_epochs": 1}, 80)
    assert simulation.spec.framework == "trl"
    assert simulation.spec.learning_rate == 2e-5 and simulation.spec.logging_steps == 10


def test_axolotl_counts_its_own_total_and_default_warmup(simulate_config):
    config = {"base_model": "m", "learning_rate": 2e-4, "micro_batch_size": 2, "gradient_accumulation_steps": 4,
              "num_epochs": 3, "val_set_size": 0.05}
    simulation = simulate_config(config, 1000, world_size=2, name="axolotl.yml")
    rows = 1000 - math.ceil(0.05 * 1000)  # train_test_split rounds the eval share up
    total = math.ceil(rows * 3 / (2 * 4 * 2))
    assert simulation.spec.scheduler.name == "cosine"  # axolotl's default scheduler
    assert simulation.plan.train_rows == rows and simulation.plan.total_steps == total
    assert simulation.plan.warmup_steps == min(int(0.03 * total), 100)
    per_epoch = math.ceil(math.ceil(math.ceil(rows / 2) / 2) / 4)
    assert simulation.plan.optimizer_steps_per_epoch == per_epoch
    assert simulation.plan.epochs_run == pytest.approx(total / per_epoch, abs=0.02)


def test_axolotl_never_warms_up_for_one_step(simulate_config):
    config = {"base_model": "m", "learning_rate": 2e-4, "micro_batch_size": 1, "num_epochs": 1}
    simulation = simulate_config(config, 40, name="axolotl.yml")  # 0.03 * 40 -> 1 step
    assert simulation.plan.warmup_steps == 2


@pytest.mark.parametrize(
    "extra,scheduler",
    [
        ({"cosine_min_lr_ratio": 0.1}, "cosine_min_lr"),
        ({"cosine_min_lr_ratio": 0.1, "cosine_constant_lr_ratio": 0.8}, "cosine_decay_constant"),
        ({"lr_quadratic_warmup": True}, "cosine_quadratic_warmup"),
        ({"lr_scheduler": "rex"}, "rex"),
        ({"lr_scheduler": "one_cycle"}, "one_cycle"),
        ({"lr_scheduler": "linear"}, "linear"),
    ],
)
def test_axolotl_scheduler_selection(simulate_config, extra, scheduler):
    config = {"base_model": "m", "learning_rate": 2e-4, "micro_batch_size": 2, "num_epochs": 2, **extra}
    simulation = simulate_config(config, 200, name="axolotl.yml")
    assert simulation.spec.scheduler.name == scheduler and simulation.scheduler_error is None
    assert max(simulation.lrs) <= 2e-4 * (1 + 1e-9)


def test_axolotl_min_lr_ratio_without_cosine_is_ignored(simulate_config):
    config = {"base_model": "m", "learning_rate": 2e-4, "micro_batch_size": 2, "lr_scheduler": "linear",
              "cosine_min_lr_ratio": 0.1}
    [ignored] = simulate_config(config, 200, name="axolotl.yml").spec.ignored
    assert ignored.key == "cosine_min_lr_ratio"


def test_axolotl_example_with_packing_and_val_split():
    simulation = simulate_fixture("axolotl_llama3_lora_1b.yml", 2000)
    assert simulation.spec.packing.enabled and simulation.plan.train_rows == 1800
    assert simulation.plan.warmup_steps == 10  # warmup_steps: 10 in the example
    assert simulation.line(simulation.spec.key("warmup")) == config_line("axolotl_llama3_lora_1b.yml", "warmup_steps")


def test_torchtune_counts_floor_steps_and_reads_the_scheduler_component():
    simulation = simulate_fixture("torchtune_llama3_2_1B_lora_single_device.yaml", 51_760)
    length = 51_760 // 4
    assert simulation.plan.micro_batches_per_epoch == length
    assert simulation.plan.optimizer_steps_per_epoch == length // 8 == simulation.plan.total_steps
    assert simulation.plan.warmup_steps == 100  # lr_scheduler.num_warmup_steps, not profiler.warmup_steps
    assert simulation.spec.log_offset == 1  # the recipe logs after stepping the scheduler
    assert simulation.lrs[100] == pytest.approx(3e-4)


def test_torchtune_shards_rows_like_the_distributed_sampler(simulate_config):
    config = {"optimizer": {"_component_": "torch.optim.AdamW", "lr": 1e-4}, "batch_size": 3, "epochs": 2,
              "lr_scheduler": {"_component_": "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup",
                               "num_warmup_steps": 2}}
    simulation = simulate_config(config, 101, world_size=4, name="tt.yaml")
    assert simulation.plan.micro_batches_per_epoch == math.ceil(101 / 4) // 3
    assert simulation.plan.total_steps == 2 * (math.ceil(101 / 4) // 3)


def test_torchtune_unknown_scheduler_component_is_an_input_error(simulate_config):
    from mldebug_cli.core.errors import InputError

    config = {"optimizer": {"_component_": "x", "lr": 1e-4}, "batch_size": 3,
              "lr_scheduler": {"_component_": "torch.optim.lr_scheduler.StepLR", "step_size": 2}}
    with pytest.raises(InputError, match="does not simulate"):
        simulate_config(config, 100, name="tt.yaml")


def test_llama_factory_caps_rows_with_max_samples_and_reads_warmup_ratio_at_the_transformers_it_allows():
    # LLaMA-Factory 0.9.5 requires transformers <= 5.6.0 (its wheel's metadata): 5.6.0 is assumed, where
    # warmup_ratio is deprecated and copied into warmup_steps, not the installed 5.24 where it is gone (no LR004)
    simulation = simulate_fixture("llama_factory_llama3_lora_sft.yaml", 5000)
    assert simulation.plan.train_rows == 1000  # max_samples: 1000
    assert simulation.plan.total_steps == 3 * 125 and simulation.plan.warmup_steps == math.ceil(0.1 * 375)
    assert simulation.spec.ignored == ()
    assert simulation.spec.transformers_version == "5.6.0"


def test_llama_factory_at_a_transformers_the_user_names_flags_warmup_ratio():
    from mldebug_cli.frameworks import read_spec, versions
    from mldebug_cli.schedule.dataset_size import from_num_rows
    from mldebug_cli.schedule.simulation import simulate
    from mldebug_cli.sources.config_file import load_config

    config = load_config(FIXTURE_CONFIGS / "llama_factory_llama3_lora_sft.yaml")
    targets = versions.resolve(str(config.path), {"transformers": "5.24.0"}, framework="llama-factory")
    simulation = simulate(config, read_spec(config, "llama-factory", 1, targets), from_num_rows(5000), "auto")
    [ignored] = simulation.spec.ignored
    assert ignored.key == "warmup_ratio" and simulation.line("warmup_ratio") == config_line("llama_factory_llama3_lora_sft.yaml", "warmup_ratio")


def test_older_transformers_reads_warmup_ratio_and_logs_the_next_step(monkeypatch, simulate_config):
    from mldebug_cli.frameworks import versions

    monkeypatch.setattr(versions, "installed", lambda framework: "4.46.3")
    simulation = simulate_config({"learning_rate": 1e-3, "per_device_train_batch_size": 2, "warmup_ratio": 0.1,
                                  "num_train_epochs": 1}, 40)
    assert simulation.plan.warmup_steps == 2 and simulation.spec.ignored == ()
    assert simulation.spec.log_offset == 1


@pytest.mark.parametrize(
    "text,words",
    [
        ("learning_rate: [1\n", "invalid YAML"),
        ("learning_rate: fast\n", "learning_rate must be a number"),
        ("lr_scheduler_type: cosine_annealing\n", "names no transformers scheduler"),
        ("- a\n- b\n", "must be a mapping"),
    ],
)
def test_unreadable_configs_are_input_errors_with_a_line(tmp_path, text, words):
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.frameworks import read_spec
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=words) as raised:
        read_spec(load_config(path), None, 1)
    assert str(path) in str(raised.value)


def test_missing_dataset_size_is_an_input_error(simulate_config):
    from mldebug_cli.core.errors import InputError

    with pytest.raises(InputError, match="needs the dataset size"):
        simulate_config({"learning_rate": 1e-3})
    assert simulate_config({"learning_rate": 1e-3, "max_steps": 12}).plan.total_steps == 12


def test_dataset_rows_are_counted(tmp_path):
    from mldebug_cli.schedule.dataset_size import count_dataset

    data = tmp_path / "rows.jsonl"
    data.write_text("".join('{"text": "x"}\n' for _ in range(37)))
    assert count_dataset(str(data)).rows == 37
