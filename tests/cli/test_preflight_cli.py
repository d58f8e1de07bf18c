"""preflight end to end: realistic configs with planted dataset defects fail, pointing at row and key; fixed, they pass."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, LLAMA3, ROOT

runner = CliRunner()
PREFLIGHT = FIXTURES / "preflight"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def preflight(*args):
    return runner.invoke(app, ["preflight", *map(str, args)], catch_exceptions=False)


def findings(result) -> list[dict]:
    return json.loads(result.stdout)["findings"]


def config_line(path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.lstrip("- ").startswith(key + ":"))


def test_axolotl_config_with_a_planted_row_fails_and_points_at_row_and_key():
    config = PREFLIGHT / "axolotl" / "config.yml"
    result = preflight(config, "-f", "json")
    assert result.exit_code == 1
    errors = [f for f in findings(result) if f["severity"] == "error"]
    assert [(f["code"], f["location"]["row"], f["location"]["line"], f["location"]["key"]) for f in errors] == [
        ("DS010", 17, 18, "datasets.0.path")
    ]
    dropped = next(f for f in findings(result) if f["code"] == "DS007")
    assert dropped["location"]["row"] == 11 and dropped["location"]["key"] == "sequence_len"
    lr = [f for f in findings(result) if f["code"].startswith("LR")]
    assert lr and all(f["location"]["path"] == str(config) for f in lr)
    warmup = next(f for f in lr if f["location"].get("key") == "warmup_steps")
    assert warmup["location"]["line"] == config_line(config, "warmup_steps")
    assert preflight(PREFLIGHT / "axolotl" / "config_fixed.yml").exit_code == 0


def test_trl_config_with_a_planted_row_fails_and_points_at_row_and_key():
    result = preflight(PREFLIGHT / "trl" / "config.yaml", "-f", "json")
    assert result.exit_code == 1
    errors = [f for f in findings(result) if f["severity"] == "error"]
    assert [(f["code"], f["location"]["row"], f["location"]["line"], f["location"]["key"]) for f in errors] == [
        ("DS011", 7, 8, "dataset_name")
    ]
    fixed = preflight(PREFLIGHT / "trl" / "config_fixed.yaml", "-f", "json")
    assert fixed.exit_code == 0
    doc = json.loads(fixed.stdout)
    assert doc["context"]["train_on"] == "assistant" and doc["context"]["max_length"] == 1024
    data = doc["summary"]["sections"][0]
    assert data["command"] == "inspect-data" and data["rows_checked"] == 24 and data["findings"] == 0


def test_llama_factory_config_reads_dataset_info_and_splits_the_length_budget():
    config = PREFLIGHT / "llama-factory" / "config.yaml"
    result = preflight(config, "-f", "json")
    assert result.exit_code == 0  # DS007 is a warning; the LR004 error this config used to get was a false flag
    found = findings(result)
    # LLaMA-Factory 0.9.5 pins transformers <= 5.6.0, where warmup_ratio still works (removed in 5.15): no LR004, and
    # CF003 names the version semantics of the key at its line
    assert not any(f["code"] == "LR004" for f in found)
    semantics = next(f for f in found if f["code"] == "CF003")
    assert semantics["location"]["key"] == "warmup_ratio" and semantics["location"]["line"] == config_line(config, "warmup_ratio")
    long_row = next(f for f in found if f["code"] == "DS007")
    assert long_row["location"]["row"] == 23 and long_row["location"]["key"] == "cutoff_len"
    assert not any(f["code"] == "DS008" for f in found)  # LLaMA-Factory keeps part of the response
    doc = json.loads(result.stdout)
    assert doc["context"]["chat_template"] == "llama-factory's own template 'qwen'"  # `template: qwen`, not the tokenizer's
    targets = [s["target"] for s in doc["summary"]["sections"]]
    assert [t.split("fixtures/")[-1] for t in targets[:2]] == [
        "preflight/llama-factory/data/shop_identity.json", "preflight/llama-factory/data/shop_tools.json"]


def test_exit_zero_and_fail_on():
    config = PREFLIGHT / "axolotl" / "config_fixed.yml"
    assert preflight(config).exit_code == 0
    assert preflight(config, "--fail-on", "info").exit_code == 1  # DS015, LR002, LR003 are infos
    assert preflight(PREFLIGHT / "axolotl" / "config.yml", "--exit-zero").exit_code == 0


def test_unreadable_configs_and_inputs_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("base_model: [unclosed\n")
    result = preflight(bad)
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {bad}: line") and "Traceback" not in result.stderr
    missing = tmp_path / "missing.yml"
    missing.write_text((PREFLIGHT / "trl" / "config.yaml").read_text().replace("train.jsonl", "nope.jsonl")
                       .replace("../../", str(PREFLIGHT.parent) + "/"))
    result = preflight(missing, "--allow-outside-paths")
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {missing}:5: dataset_name:")


def test_paths_outside_the_working_directory_are_refused(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(f"model_name_or_path: {FIXTURES / 'tokenizers' / 'qwen2.5-instruct'}\n"
                      f"dataset_name: {PREFLIGHT / 'trl' / 'train.jsonl'}\nassistant_only_loss: true\n")
    inside = preflight(config)  # the repo is the working directory: allowed
    assert inside.exit_code == 1
    outside = tmp_path / "elsewhere.yaml"
    (tmp_path / "secret.jsonl").write_text('{"text": "x"}\n')
    outside.write_text(f"model_name_or_path: {FIXTURES / 'tokenizers' / 'qwen2.5-instruct'}\ndataset_name: /etc/hostname\n")
    result = preflight(outside)
    assert result.exit_code == 2 and "points outside the working directory" in result.stderr


def test_deploy_artefacts_are_compared_with_the_training_template():
    result = preflight(PREFLIGHT / "trl" / "config_fixed.yaml", "--deploy", FIXTURES / "deploy" / "qwen3-chatml-no-stop.Modelfile", "-f", "json")
    assert result.exit_code == 1
    codes = {f["code"] for f in findings(result)}
    assert {"CT005", "CT006"} <= codes  # no <|im_end|> stop word; Qwen's default system prompt only in training
    stop = next(f for f in findings(result) if f["code"] == "CT005")
    assert "<|im_end|>" in stop["message"] and stop["location"]["side"] == "deploy"
    sections = [s["command"] for s in json.loads(result.stdout)["summary"]["sections"]]
    assert sections == ["inspect-data", "lr-plot", "check-template"]


def test_axolotl_masking_keys_decide_what_is_trained(tmp_path):
    """Llama 3 (whose EOS is <|end_of_text|>) under axolotl's defaults never trains <|eot_id|> (DS004, pointing at
    train_on_eos); eot_tokens fixes it."""
    rows = [{"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
                          {"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = (f"base_model: {LLAMA3}\nsequence_len: 512\nmicro_batch_size: 1\n"
            "num_epochs: 1\nlearning_rate: 0.0001\ndatasets:\n  - path: train.jsonl\n    type: chat_template\n")
    config = tmp_path / "config.yml"
    config.write_text(base + "    train_on_eos: turn\n")
    [stop] = [f for f in findings(preflight(config, "-f", "json")) if f["code"] == "DS004"]
    assert stop["location"]["key"] == "datasets.0.train_on_eos" and "eot_tokens" in stop["hint"]
    config.write_text(base + "eot_tokens: ['<|eot_id|>']\n")
    result = preflight(config, "-f", "json")
    assert not [f for f in findings(result) if f["code"] == "DS004"]
    context = json.loads(result.stdout)["sections"][0]["context"]
    assert "eot_tokens ['<|eot_id|>']" in context["train_on"]
    config.write_text(base + "eot_tokens: ['loop_messages']\n")  # text of the template, several tokens
    refused = preflight(config)
    assert refused.exit_code == 2 and f"{config}:9: eot_tokens: axolotl refuses" in refused.stderr
    config.write_text(base + "    train_on_eot: sometimes\n")
    assert "train_on_eot must be one of" in preflight(config).stderr
