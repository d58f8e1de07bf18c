"""LLaMA-Factory 0.9.5's v1 engine (issue 34): ``llamafactory-cli`` launches ``llamafactory.v1`` when ``USE_V1`` is
true, y or 1 (its cli.py, ``extras.misc.is_env_enabled``), and the v1 config has keys no v0 hparams class has. mldebug
emulates the v0 engine only, and says so in one line wherever the environment or the config selects v1."""

from __future__ import annotations

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.llama_factory.framework import read_plan, v1_engine
from mldebug_cli.sources.config_file import load_config
from support import FIXTURES

V0_CONFIG = FIXTURES / "preflight" / "llama-factory" / "config.yaml"


@pytest.mark.parametrize("value", ["1", "true", "Y"])
def test_use_v1_in_the_environment_is_named_in_the_plan_notes(monkeypatch, value):
    monkeypatch.setenv("USE_V1", value)
    notes = read_plan(load_config(V0_CONFIG)).notes
    assert [n for n in notes if "v1 engine" in n] == [
        "LLaMA-Factory's v1 engine is selected (USE_V1 is set): it is not emulated; mldebug follows the v0 engine of "
        "`llamafactory-cli train` (its data path, batching and steps)"]


@pytest.mark.parametrize("value", ["0", "yes", "on", ""])  # v0's is_env_enabled reads only true, y and 1
def test_other_use_v1_values_leave_the_v0_engine(monkeypatch, value):
    monkeypatch.setenv("USE_V1", value)
    assert not any("v1 engine" in n for n in read_plan(load_config(V0_CONFIG)).notes)


def test_a_v1_config_stops_with_the_line_that_names_its_keys(tmp_path, monkeypatch):
    monkeypatch.delenv("USE_V1", raising=False)
    path = tmp_path / "v1.yaml"
    path.write_text("model: Qwen/Qwen3-0.6B\ntemplate: qwen3_nothink\ntrain_dataset: data/v1_sft_demo.yaml\n"
                    "micro_batch_size: 1\nglobal_batch_size: 4\noutput_dir: out\n", encoding="utf-8")
    config = load_config(path)
    assert v1_engine(config) is not None
    with pytest.raises(InputError, match=r"v1\.yaml: LLaMA-Factory's v1 engine is selected \(the config sets "
                                         r"train_dataset, global_batch_size\): it is not emulated"):
        read_plan(config)
