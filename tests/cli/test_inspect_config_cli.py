"""inspect-data --config end to end: one dataset inspected with what a training config sets, flags winning."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, LLAMA3, QWEN25, ROOT

runner = CliRunner()
PREFLIGHT = FIXTURES / "preflight"
AXOLOTL = PREFLIGHT / "axolotl" / "config.yml"
LLAMA_FACTORY = PREFLIGHT / "llama-factory" / "config.yaml"
TRL = PREFLIGHT / "trl" / "config_fixed.yaml"


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def inspect(*args):
    return runner.invoke(app, ["inspect-data", *map(str, args)], catch_exceptions=False)


def report(*args) -> dict:
    result = inspect(*args, "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def line_of(path, key: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.lstrip("- ").startswith(key + ":"))


def trained(doc: dict) -> dict[int, tuple[list[int], list[int]]]:
    return {r["row"]: (r["input_ids"], r["labels"]) for r in doc["rows"]}


def test_an_axolotl_config_gives_the_rows_its_flags_would_give_and_says_where_each_setting_came_from():
    rows = ("--rows", "0-24")
    configured = report("--config", AXOLOTL, *rows)  # no DATASET, no --tokenizer: the config's dataset and model
    by_flags = report(PREFLIGHT / "axolotl" / "train.jsonl", "-t", QWEN25, "--framework", "axolotl",
                      "--max-length", "1024", *rows)
    assert trained(configured) == trained(by_flags) and len(trained(configured)) == 25
    assert configured["summary"]["trainable_tokens"] == by_flags["summary"]["trainable_tokens"]
    context = configured["context"]
    assert context["config"] == f"{AXOLOTL} (axolotl: detected from its keys)"
    assert f"max_length 1024 (sequence_len, line {line_of(AXOLOTL, 'sequence_len')})" in context["from_config"]
    assert f"tokenizer {QWEN25} (base_model, line {line_of(AXOLOTL, 'base_model')})" in context["from_config"]
    assert f"train_on_eos turn (datasets.0.train_on_eos, line {line_of(AXOLOTL, 'train_on_eos')})" in context["from_config"]
    assert context["flags_over_config"] is None
    dropped = next(f for f in configured["findings"] if f["code"] == "DS007")  # axolotl drops the 3,712-token row
    assert dropped["location"]["row"] == 11 and dropped["location"]["key"] == "sequence_len"


def test_flags_given_win_over_the_config_and_findings_stop_pointing_at_the_key_they_replaced():
    doc = report("--config", AXOLOTL, "--max-length", "64", "--train-on", "all", "--all")
    context = doc["context"]
    assert context["max_length"] == 64 and context["train_on"].startswith("all via axolotl")
    assert context["flags_over_config"] == (f"--max-length over sequence_len: 1024 (line {line_of(AXOLOTL, 'sequence_len')}); "
                                           "--train-on over the framework's default train_on assistant")
    assert "sequence_len" not in context["from_config"]
    truncated = [f for f in doc["findings"] if f["code"] == "DS007"]
    assert len(truncated) > 1 and {f["location"]["key"] for f in truncated} == {"datasets.0.path"}
    default = report("--config", AXOLOTL, "--all")
    assert doc["summary"]["trainable_tokens"] != default["summary"]["trainable_tokens"]


def test_a_llama_factory_config_with_two_datasets_inspects_the_one_named():
    tools = report("shop_tools", "--config", LLAMA_FACTORY)
    assert tools["context"]["dataset"].endswith("data/shop_tools.json") and tools["summary"]["rows"] == 30
    assert tools["context"]["format"].startswith("sharegpt") and tools["context"]["max_length"] == 2048
    long_row = next(f for f in tools["findings"] if f["code"] == "DS007")
    assert long_row["location"]["row"] == 23 and long_row["location"]["key"] == "cutoff_len"
    by_path = report(PREFLIGHT / "llama-factory" / "data" / "shop_tools.json", "--config", LLAMA_FACTORY)
    assert by_path["summary"] == tools["summary"]
    first = report("--config", LLAMA_FACTORY)
    assert first["context"]["dataset"].endswith("data/shop_identity.json") and first["summary"]["rows"] == 20
    assert "the first of the config's 2 datasets" in first["context"]["config_notes"]


def test_a_dataset_the_config_does_not_name_among_several_is_an_error_listing_them():
    result = inspect("shop_reviews", "--config", LLAMA_FACTORY)
    assert result.exit_code == 2
    dataset_line = line_of(LLAMA_FACTORY, "dataset")
    assert result.stderr.splitlines()[0] == (
        f"Error: {LLAMA_FACTORY}: shop_reviews is none of the config's datasets: shop_identity (dataset, line "
        f"{dataset_line}), shop_tools (dataset, line {dataset_line})")


def test_a_trl_config_sets_assistant_only_loss_its_template_and_max_length():
    doc = report("--config", TRL, "--all")
    context = doc["context"]
    assert context["train_on"].startswith("assistant") and context["max_length"] == 1024
    assert context["chat_template"].endswith("templates/chatml_generation.jinja")
    assert f"train_on assistant (assistant_only_loss, line {line_of(TRL, 'assistant_only_loss')})" in context["from_config"]
    everything = report("--config", TRL, "--all", "--train-on", "all")
    assert everything["summary"]["trainable_tokens"] > doc["summary"]["trainable_tokens"]


def test_the_project_configs_read_with_an_npm_tokenizer_and_our_own_rows():
    """fixtures/configs name hub models and datasets: --tokenizer and DATASET stand in, the rest is the config's."""
    config = FIXTURES / "configs" / "axolotl_llama3_lora_1b.yml"
    doc = report(PREFLIGHT / "llama-factory" / "data" / "shop_identity.json", "--config", config, "-t", LLAMA3, "--all")
    context = doc["context"]
    assert context["format"].startswith("alpaca") and context["max_length"] == 2048
    assert f"data_format alpaca (datasets.0.path, line {line_of(config, 'path')})" in context["from_config"]
    assert context["train_on"] == "completion via axolotl's alpaca prompter (its own prompt text and tokenization; no chat template)"
    assert doc["rows"][0]["prompt"].startswith("Below is an instruction that describes a task")
    assert "is not the config's dataset (shop/support-chats (datasets.0.path, line 4))" in context["config_notes"]
    assert "--tokenizer over base_model: meta-llama/Llama-3.2-1B (line 2)" in context["flags_over_config"]
    trl = FIXTURES / "configs" / "trl_open_r1_sft_demo.yaml"
    doc = report(PREFLIGHT / "trl" / "train_fixed.jsonl", "--config", trl, "-t", QWEN25)
    assert doc["context"]["max_length"] == 4096
    assert f"max_length 4096 (max_seq_length, line {line_of(trl, 'max_seq_length')})" in doc["context"]["from_config"]


def error_of(*args) -> str:
    result = inspect(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("Error: ") and "Traceback" not in result.stderr
    return lines[0]


def test_a_config_whose_model_is_a_hub_id_asks_for_the_tokenizer_naming_the_key_and_line():
    config = FIXTURES / "configs" / "trl_open_r1_sft_demo.yaml"
    message = error_of(PREFLIGHT / "trl" / "train_fixed.jsonl", "--config", config)
    assert message.startswith(f"Error: {config}:{line_of(config, 'model_name_or_path')}: model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct")


@pytest.mark.parametrize("text, expected", [
    ("base_model: x\ndatasets:\n  - path: a.jsonl\n    type: [chat\n", "line 5: invalid YAML (expected ',' or ']'"),
    (f"base_model: {QWEN25}\nsequence_len: 64\nmicro_batch_size: 1\ndatasets:\n  - type: chat_template\n",
     ":5: datasets[0] has no path"),
    (f"base_model: {QWEN25}\nsequence_len: 64\nmicro_batch_size: 1\ndatasets:\n  - path: rows.jsonl\n"
     "    train_on_eos: yes\n", ":6: train_on_eos must be one of all, turn, last, none, not True"),
])
def test_bad_configs_are_one_line_errors_with_file_and_line(tmp_path, text, expected):
    (tmp_path / "rows.jsonl").write_text('{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n')
    config = tmp_path / "axolotl.yml"
    config.write_text(text)
    message = error_of("--config", config, "--allow-outside-paths")
    assert message.startswith(f"Error: {config}") and expected in message


def test_without_a_config_the_dataset_and_tokenizer_are_required():
    assert error_of("-t", QWEN25) == "Error: give the DATASET to inspect"
    assert error_of(PREFLIGHT / "trl" / "train.jsonl").startswith("Error: --tokenizer is required")


def test_an_unsloth_run_reads_its_sft_config_and_masks_with_the_parts_given():
    parts = ("--instruction-part", "<|im_start|>user\\n", "--response-part", "<|im_start|>assistant\\n")
    configured = report("--config", TRL, "--framework", "unsloth", *parts, "--rows", "0-23")
    by_flags = report(PREFLIGHT / "trl" / "train_fixed.jsonl", "-t", QWEN25, "--chat-template",
                      FIXTURES / "templates" / "chatml_generation.jinja", *parts, "--max-length", "1024", "--rows", "0-23")
    assert trained(configured) == trained(by_flags) and len(trained(configured)) == 24
    assert configured["context"]["train_on"].startswith("assistant via Unsloth train_on_responses_only")
    assert configured["context"]["config"] == f"{TRL} (unsloth: --framework, over trl detected from its keys)"


PREFERENCE = FIXTURES / "configs" / "preference"


def test_a_preference_config_inspects_its_pairs_as_the_preference_trainer_prepares_them():
    """A LLaMA-Factory `stage: dpo` config: its ranking rows go through the pairwise processor with its template and
    cutoff_len (not the supervised path, where every pair would be a conversation with no assistant turn)."""
    doc = report("--config", PREFERENCE / "llama_factory_dpo_cutoff48.yaml")
    codes = {f["code"] for f in doc["findings"]}
    assert "DS010" not in codes and {"DP006", "DP013"} <= codes
    assert "pairwise processor" in doc["context"]["framework"] and doc["context"]["max_length"] == 48
    cut = next(f for f in doc["findings"] if f["code"] == "DP006")
    assert cut["location"]["key"] == "cutoff_len"
    assert all({"chosen", "rejected"} <= set(r) for r in doc["rows"] if not r.get("dropped"))


def test_flags_win_over_a_preference_config():
    doc = report("--config", PREFERENCE / "trl_dpo.yaml", "--max-length", "4096")
    assert doc["context"]["max_length"] == 4096 and "max_length" in doc["context"]["flags_over_config"]


def test_the_header_names_axolotls_named_template_and_where_the_format_came_from(tmp_path):
    """Issue 34 friction: a named axolotl template is named in the header, not the private file mldebug wrote it to;
    a format the config sets is said to come from the config, not from --data-format."""
    text = AXOLOTL.read_text().replace("chat_template: tokenizer_default", "chat_template: chatml").replace(
        "../../tokenizers/", str(FIXTURES / "tokenizers") + "/")
    config = tmp_path / "config.yml"
    config.write_text(text)
    (tmp_path / "train.jsonl").write_text((PREFLIGHT / "axolotl" / "train.jsonl").read_text())
    context = report("--config", config, "--allow-outside-paths")["context"]
    assert context["chat_template"] == "axolotl's 'chatml' template, from axolotl 0.19.0 (stored copy; axolotl is not installed)"
    assert "mldebug-axolotl-templates" not in json.dumps(context)



def test_a_format_the_config_sets_is_said_to_come_from_the_config(tmp_path):
    from mldebug_cli.pipelines.inspect import InspectOptions, _detection
    from mldebug_cli.sources.shards import open_dataset
    from support import write_jsonl

    rows = write_jsonl(tmp_path / "rows.jsonl", [{"messages": [{"role": "user", "content": "a"},
                                                               {"role": "assistant", "content": "b"}]}])
    options = InspectOptions(dataset=str(rows), tokenizer=str(QWEN25), data_format="sharegpt",
                             data_format_from="the config's datasets.0.path")
    found = _detection(open_dataset(str(rows)), options)
    assert (found.row_format, found.reason) == ("sharegpt", "the config's datasets.0.path")
    assert _detection(open_dataset(str(rows)), InspectOptions(dataset=str(rows), tokenizer="", data_format="sharegpt")
                      ).reason == "--data-format"
