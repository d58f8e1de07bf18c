"""Hostile training configs through `mldebug lr-plot --config`: YAML alias bombs and paths that leave the folder."""

from __future__ import annotations

import json
import os
import sys

import pytest

from outcomes import HOSTILE, assert_one_line_error, run_cli, run_cli_process, unchanged

CONFIGS = HOSTILE / "configs"
BASE = "learning_rate: 0.0001\nnum_train_epochs: 1\nper_device_train_batch_size: 8\n"
SECRET = "SECRET-TOKEN-0123456789"
MEMORY_GUARD = "import resource; resource.setrlimit(resource.RLIMIT_DATA, (2**30, resource.RLIM_INFINITY))"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child's memory guard needs RLIMIT_DATA")
@pytest.mark.parametrize("name", ["billion_laughs.yaml", "mapping_bomb.yaml"])
def test_yaml_alias_bombs_are_read_once(name):
    """Ten lines that expand to 9**10 entries: the schedule is the plain config's, found in seconds, in bounded memory."""
    path = CONFIGS / name
    with unchanged(path):
        code, stdout, stderr, _ = run_cli_process("lr-plot", "--config", path, "--num-rows", "100", "-f", "json",
                                                  prelude=MEMORY_GUARD, timeout=120)
    assert code == 1, stderr
    report = json.loads(stdout)
    keys = [f["location"]["key"] for f in report["findings"] if f["code"] == "CF001"]  # no TrainingArguments field
    prefix = {"billion_laughs.yaml": "lol", "mapping_bomb.yaml": "map"}[name]
    assert keys == [f"{prefix}{i}" for i in range(10)]
    assert [f["code"] for f in report["findings"] if f["code"].startswith("LR")] == ["LR002", "LR008"]
    assert report["total_optimizer_steps"] == 13


def test_a_deepspeed_path_outside_the_working_directory_is_not_read(tmp_path, monkeypatch):
    """The path policy (issue 36): a DeepSpeed config outside the working directory and the config's folder is not
    opened at all, and a note says so; its content never reaches the report."""
    outside = tmp_path / "outside" / "secret.json"
    outside.parent.mkdir()
    outside.write_text(f"{SECRET}\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    relative = os.path.join("..", "outside", "secret.json")
    for named in (relative, str(outside)):
        config = work / "config.yaml"
        config.write_text(BASE + f"deepspeed: {named}\n")
        with unchanged(config, outside):
            result = run_cli("lr-plot", "--config", config, "--num-rows", "100", "-f", "json")
        assert result.exit_code == 0
        assert json.loads(result.stdout)["context"]["notes"] == (
            f"DeepSpeed config {named} resolves outside the working directory and the config's folder: it was not "
            "read and its scheduler block was not checked"
        )
        assert SECRET not in result.stdout + result.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_deepspeed_path_naming_a_fifo_or_a_device_is_never_opened(tmp_path):
    """Opening either would block or never end; a child process turns a hang into a failure."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for named in (str(fifo), "/dev/zero"):
        config = tmp_path / "config.yaml"
        config.write_text(BASE + f"deepspeed: {named}\n")
        code, stdout, stderr, _ = run_cli_process("lr-plot", "--config", config, "--num-rows", "100", "-f", "json")
        assert code == 0, stderr
        assert json.loads(stdout)["context"]["notes"] == (
            f"DeepSpeed config {named} not found: its scheduler block was not checked"
        )


def test_a_torchtune_component_naming_arbitrary_code_is_never_imported(tmp_path, monkeypatch):
    """`_component_` is matched against the schedulers lr-plot knows; it is never imported or called."""
    monkeypatch.chdir(tmp_path)
    path = CONFIGS / "torchtune_component.yaml"
    with unchanged(path):
        result = run_cli("lr-plot", "--config", path, "--num-rows", "100")
    assert_one_line_error(
        result.exit_code, result.stderr,
        f"{path}: line 7: lr_scheduler._component_ is 'os.system', which lr-plot does not simulate (it knows "
        "torchtune.training.lr_schedulers.get_cosine_schedule_with_warmup, torchtune.modules.get_cosine_schedule_with_warmup)",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_a_deeply_nested_config_is_a_one_line_input_error(tmp_path, suffix):
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"learning_rate": 0.0001, "x": ' + "[" * 5000 + "]" * 5000 + "}")
    result = run_cli("lr-plot", "--config", path, "--num-rows", "100")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}") and "internal error" not in result.stderr
