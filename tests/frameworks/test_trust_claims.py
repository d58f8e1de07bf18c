"""Issue 21's wrong claims, each checked against what the real framework does (TRL 1.16 run here where it is
installed; goldens written by tools/ scripts otherwise)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import ROOT

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [*map(str, args)], catch_exceptions=False)


SFT_CONFIG_YAML = """\
model_name_or_path: Qwen/Qwen2.5-0.5B-Instruct
max_length: 2048
learning_rate: 2.0e-5
warmup_ratio: 0.1
num_train_epochs: 1
per_device_train_batch_size: 4
"""


def test_a_trl_sftconfig_yaml_is_detected_as_trl_as_trls_own_config_class_reads_it(tmp_path):
    """Item 4: max_length is an SFTConfig field, not a TrainingArguments one: the file is TRL's, not CF001."""
    import yaml

    from mldebug_cli.frameworks import detect_framework
    from mldebug_cli.sources.config_file import load_config

    config = tmp_path / "sft.yaml"
    config.write_text(SFT_CONFIG_YAML)
    assert detect_framework(load_config(config)) == "trl"
    result = invoke("lr-plot", "-c", config, "--num-rows", 1000, "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["context"]["framework"].startswith("trl")
    assert not [f for f in doc["findings"] if f["code"] == "CF001"]
    trl = pytest.importorskip("trl")
    transformers = pytest.importorskip("transformers")
    data = {k: v for k, v in yaml.safe_load(SFT_CONFIG_YAML).items() if k != "model_name_or_path"}
    data.pop("warmup_ratio")  # version-dependent (item 3): not what this test is about
    assert trl.SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, **data).max_length == 2048  # TRL's class takes the file
    with pytest.raises(TypeError, match="max_length"):
        transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, **data)  # plain transformers does not


def test_axolotls_named_chat_template_does_not_trip_the_path_guard_on_mldebugs_own_copy(tmp_path, monkeypatch):
    """Item 5: chat_template: qwen_25 is axolotl's own file (installed, or the stored 0.19.0 copy mldebug writes to
    a private temporary folder): the outside-paths guard is for files the config names, not that one."""
    from support import FIXTURES, QWEN25

    monkeypatch.chdir(ROOT)
    source = FIXTURES / "preflight" / "axolotl"
    (tmp_path / "train.jsonl").write_text((source / "train_fixed.jsonl").read_text())
    text = (source / "config_fixed.yml").read_text()
    text = text.replace("base_model: ../../tokenizers/qwen2.5-instruct", f"base_model: {QWEN25}")
    text = text.replace("chat_template: tokenizer_default", "chat_template: qwen_25").replace("train_fixed.jsonl", "train.jsonl")
    config = tmp_path / "config.yml"
    config.write_text(text)
    result = invoke("preflight", config, "-f", "json")
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    assert "qwen_25" in json.dumps(doc["context"])


def test_axolotl_dpo_dataset_keys_are_read_from_its_dpodataset_schema_not_flagged_cf001(tmp_path, monkeypatch):
    """Item 6: with rl: dpo axolotl 0.19.0 validates datasets entries with DPODataset (field_chosen, field_rejected,
    field_messages: the stored list is generated from the wheel by tools/framework_keys.py); a typo is still CF001."""
    from support import FIXTURES, QWEN25

    from mldebug_cli.frameworks import schema

    stored = schema.stored("axolotl-0.19.0.json")["schemas"]
    assert {"field_chosen", "field_rejected", "field_messages"} <= set(stored["datasets_dpo"])
    assert "field_chosen" not in stored["datasets"]  # SFTDataset has none of them
    monkeypatch.chdir(ROOT)
    rows = FIXTURES / "trl-1.16.0-preference" / "rows_dpo_conversational.json"
    config = tmp_path / "dpo.yml"
    config.write_text(f"base_model: {QWEN25}\nrl: dpo\nchat_template: tokenizer_default\ndatasets:\n"
                      f"  - path: {rows}\n    split: train\n    type: chat_template.default\n"
                      "    field_messages: conversation\n    field_chosen: chosen\n    field_rejected: rejected\n"
                      "sequence_len: 2048\nmicro_batch_size: 1\nnum_epochs: 1\nlearning_rate: 5.0e-7\n"
                      "output_dir: ./out\n")
    doc = json.loads(invoke("preflight", config, "-f", "json", "--allow-outside-paths").stdout)
    unknown = [f["location"]["key"] for f in doc["findings"] if f["code"] == "CF001"]
    assert unknown == []
    config.write_text(config.read_text().replace("field_chosen: chosen", "field_chosn: chosen"))
    doc = json.loads(invoke("preflight", config, "-f", "json", "--allow-outside-paths").stdout)
    assert [f["location"]["key"] for f in doc["findings"] if f["code"] == "CF001"] == ["datasets.0.field_chosn"]
