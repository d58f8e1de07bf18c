"""Which preference trainer a config is for, read as TRL's config classes (installed, else the stored 1.16 key list),
axolotl's `rl:` and LLaMA-Factory's `stage:` define it."""

from __future__ import annotations

import pytest

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks import versions
from mldebug_cli.frameworks.preference_config import trl_config_class
from mldebug_cli.frameworks.selector import read_preference
from mldebug_cli.frameworks.trl.framework import trl_keys
from mldebug_cli.sources.config_file import load_config

OWN, _ = trl_keys(versions.TargetVersions())


@pytest.mark.parametrize(("keys", "expected"), [
    ({"beta": 0.1}, "DPOConfig"),
    ({"beta": 0.1, "truncation_mode": "keep_end", "max_length": 512}, "DPOConfig"),
    ({"desirable_weight": 1.0, "max_length": 512}, "KTOConfig"),
    ({"num_generations": 8, "beta": 0.04}, "GRPOConfig"),
    ({"num_generations": 8, "max_completion_length": 256}, "GRPOConfig"),
    ({"beta": 0.1, "max_completion_length": 256}, "ORPOConfig"),
    ({"max_length": 1024, "packing": True}, "SFTConfig"),
    ({"max_length": 1024}, "SFTConfig"),  # a key every class has says nothing
    ({"loss_type": "nll"}, "SFTConfig"),
    ({"learning_rate": 1e-5}, "SFTConfig"),
])
def test_the_keys_decide_the_trl_config_class(keys, expected):
    assert trl_config_class(keys, OWN) == expected


def test_a_task_names_the_class_whatever_the_keys():
    assert trl_config_class({"num_generations": 8}, OWN, "dpo") == "DPOConfig"


def write(tmp_path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return load_config(path)


def test_trl_defaults_and_explicit_settings(tmp_path):
    dpo = read_preference(write(tmp_path, "beta: 0.1\n"), "trl", None, versions.TargetVersions())
    assert (dpo.task, dpo.max_length.value, dpo.max_length.key, dpo.truncation_mode.value) == ("dpo", 1024, None, None)
    cut = read_preference(write(tmp_path, "beta: 0.1\nmax_length: 64\ntruncation_mode: keep_end\n"), "trl", None,
                          versions.TargetVersions())
    assert (cut.max_length.value, cut.max_length.key, cut.truncation_mode.value) == (64, "max_length", "keep_end")
    grpo = read_preference(write(tmp_path, "num_generations: 4\nreward_funcs: [accuracy_reward, my.reward]\n"), "trl",
                           None, versions.TargetVersions())
    assert (grpo.task, grpo.max_length.value, grpo.reward_columns.value) == ("grpo", None, ("solution",))
    assert any("'my.reward'" in note for note in grpo.notes)
    assert read_preference(write(tmp_path, "packing: true\n"), "trl", None, versions.TargetVersions()) is None


def test_another_trl_version_is_said_not_to_be_emulated(tmp_path):
    targets = versions.resolve(str(tmp_path / "config.yaml"), {"trl": "0.19.1"})
    found = read_preference(write(tmp_path, "beta: 0.1\n"), "trl", None, targets)
    assert any("trl 0.19.1" in gap and "1.16.0" in gap for gap in found.not_emulated)


@pytest.mark.parametrize(("rl", "task"), [("dpo", "dpo"), ("ipo", "dpo"), ("kto", "kto"), ("orpo", "orpo"),
                                          ("grpo", "grpo"), ("gdpo", "grpo")])
def test_axolotl_rl_values(tmp_path, rl, task):
    found = read_preference(write(tmp_path, f"rl: {rl}\nsequence_len: 512\n"), "axolotl", None,
                            versions.TargetVersions())
    assert found.task == task and found.trainer == f"axolotl rl: {rl}"
    assert found.max_length.value == (None if task == "grpo" else 512)


def test_axolotl_simpo_is_refused_with_the_line(tmp_path):
    with pytest.raises(InputError, match=r"config.yaml:1: rl: 'simpo' is not a trainer mldebug emulates"):
        read_preference(write(tmp_path, "rl: simpo\n"), "axolotl", None, versions.TargetVersions())


def test_axolotl_without_rl_is_supervised(tmp_path):
    assert read_preference(write(tmp_path, "sequence_len: 512\n"), "axolotl", None, versions.TargetVersions()) is None


def test_llama_factory_stage_sft_is_supervised_and_a_bad_task_is_a_usage_error(tmp_path):
    assert read_preference(write(tmp_path, "stage: sft\n"), "llama-factory", None, versions.TargetVersions()) is None
    with pytest.raises(UsageError):
        read_preference(write(tmp_path, "stage: sft\n"), "llama-factory", "ppo", versions.TargetVersions())
