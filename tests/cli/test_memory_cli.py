"""`mldebug memory` end to end on configs written for it (fixtures/memory/): the row that makes a run run out of
memory is named with its step, the GRPO logits term carries its formula, bad flags exit 2 in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "fixtures" / "memory"
MODELS = REPO / "fixtures" / "memory-models"


def memory(*args: str):
    from mldebug_cli.cli import app

    return CliRunner().invoke(app, ["memory", *args])


@pytest.fixture(scope="module")
def long_row() -> dict:
    result = memory(str(CONFIGS / "sft_long_row.yaml"), "--model", str(MODELS / "qwen2.5-0.5b"), "--gpu", "L4-24GB",
                    "-f", "json")
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)


def test_the_long_row_is_named_with_its_step(long_row):
    oom = [f for f in long_row["findings"] if f["code"] == "MEM001"]
    assert len(oom) == 1
    assert oom[0]["location"]["row"] == 27 and oom[0]["location"]["step"] == long_row["batch"]["step"]
    assert "exceeds the L4-24GB's 22.0 GiB" in oom[0]["message"]
    one_row = next(f for f in long_row["findings"] if f["code"] == "MEM003")
    assert one_row["message"].startswith("row 27 (") and "set the peak at step" in one_row["message"]
    assert 27 in long_row["batch"]["rows"]


def test_fixes_come_with_their_estimates(long_row):
    fixes = long_row["fixes"]
    changes = [f["change"] for f in fixes]
    assert changes[0].startswith("micro_batch_size 8 → ")
    assert any(c.startswith("gradient_checkpointing off → on") for c in changes)
    cut = next(f for f in fixes if f["key"] == "max_length")
    assert "(27)" in cut["note"] and cut["after"] < cut["before"]
    assert all(f["after"] < f["before"] for f in fixes)


def test_terms_sum_to_the_peak(long_row):
    d = long_row
    by_moment = {}
    for term in d["terms"]:
        by_moment[term["moment"]] = by_moment.get(term["moment"], 0) + term["bytes"]
    assert d["allocated"] == max(d["moments"].values()) == d["moments"][d["peak_moment"]]
    assert d["moments"]["backward start"] == by_moment["resident"] + by_moment["saved"] + by_moment["loss"]
    assert d["moments"]["last layer's backward"] == (by_moment["resident"] + by_moment["saved"] + by_moment["layer-backward"]
                                                     + by_moment["backward-end"])  # the tied embedding's gradient


def test_grpo_logits_term_shows_formula_and_values():
    result = memory(str(CONFIGS / "grpo.yaml"), "--model", str(MODELS / "qwen2.5-1.5b"), "--gpu", "A100-40GB",
                    "-f", "json")
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.stdout)
    terms = {t["name"]: t for t in doc["terms"]}
    logits = terms["logits and loss"]
    assert "tile min(16,384, 4096) × 32,768 × 2 B" in logits["formula"]  # 8 completions × 2,048 scored tokens
    assert "never built" in logits["formula"] and logits["bytes"] > 0
    assert terms["generation KV cache"]["formula"].startswith("8 completions × (")
    assert terms["reference model"]["bytes"] == 2 * 1_543_714_304
    assert any(f["code"] == "MEM005" for f in doc["findings"])
    text = memory(str(CONFIGS / "grpo.yaml"), "--model", str(MODELS / "qwen2.5-1.5b"), "-f", "text", "--color", "never")
    assert "logits and loss" in text.stdout and "never built" in text.stdout.replace("\n", " ")


@pytest.mark.parametrize("args,message", [
    (["--gpu", "A100"], "--gpu A100 is ambiguous"),
    (["--gpu", "TPU"], "is not a GPU mldebug knows"),
    (["--model", "no/such/model"], "no config.json there"),
])
def test_bad_input_is_one_line_and_exit_2(args, message):
    result = memory(str(CONFIGS / "grpo.yaml"), *(["--model", str(MODELS / "qwen2.5-0.5b")] if "--model" not in args else []),
                    *args)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_explain_prints_the_check_doc():
    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, ["explain", "MEM003"])
    assert result.exit_code == 0 and "What it finds" in result.output and "one-row-sets-the-peak" in result.output


def test_preflight_estimates_memory_when_the_model_config_is_local():
    from mldebug_cli.cli import app

    config = REPO / "fixtures" / "preflight" / "trl" / "config.yaml"
    result = CliRunner().invoke(app, ["preflight", str(config), "--model", str(MODELS / "qwen2.5-0.5b"),
                                      "--gpu-memory", "4", "-f", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    sections = {s["command"]: s for s in doc["summary"]["sections"]}
    assert sections["memory"]["fits"] is False and sections["memory"]["largest_term"] == "optimizer states"
    oom = next(f for f in doc["findings"] if f["code"] == "MEM001")
    assert "exceeds the 4.0 GiB given" in oom["message"] and oom["location"]["step"] is not None
    without = CliRunner().invoke(app, ["preflight", str(config), "-f", "json"])  # the tokenizer folder has no config.json
    assert "memory" not in {s["command"] for s in json.loads(without.stdout)["summary"]["sections"]}


def _outside_config(tmp_path: Path) -> Path:
    """A config in one folder naming a dataset in another, both outside the working directory."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "rows.jsonl").write_text((CONFIGS / "long_row.jsonl").read_text())
    folder = tmp_path / "cfg"
    folder.mkdir()
    text = (CONFIGS / "sft_long_row.yaml").read_text()
    text = text.replace("model_name_or_path: ../tokenizers/qwen2.5-instruct",
                        f"model_name_or_path: {REPO / 'fixtures' / 'tokenizers' / 'qwen2.5-instruct'}")
    text = text.replace("dataset_name: long_row.jsonl", f"dataset_name: {data / 'rows.jsonl'}")
    (folder / "config.yaml").write_text(text)
    return folder / "config.yaml"


def test_rows_outside_the_working_folder_are_not_read_silently(tmp_path):
    config = _outside_config(tmp_path)
    result = memory(str(config), "--model", str(MODELS / "qwen2.5-0.5b"), "-f", "json")
    doc = json.loads(result.stdout)
    unread = [f for f in doc["findings"] if f["code"] == "MEM007"]
    assert len(unread) == 1 and "the rows were not read" in unread[0]["message"]
    assert "--allow-outside-paths" in unread[0]["message"] and "8 × 8,192 tokens" in unread[0]["message"]
    allowed = json.loads(memory(str(config), "--model", str(MODELS / "qwen2.5-0.5b"), "--allow-outside-paths",
                                "-f", "json").stdout)
    assert not [f for f in allowed["findings"] if f["code"] == "MEM007"]
    assert 27 in allowed["batch"]["rows"] and allowed["batch"]["length"] < 8192


def test_the_report_says_what_it_assumed():
    result = memory(str(CONFIGS / "grpo.yaml"), "--model", str(MODELS / "qwen2.5-0.5b"), "-f", "json",
                    "--transformers-version", "4.44.2")
    assumed = json.loads(result.stdout)["context"]["assumed"]
    assert assumed.startswith("loss: TRL 1.16's fused LM head") and "attention: sdpa" in assumed
    assert "transformers 4.44.2 (--transformers-version)" in assumed


@pytest.mark.slow
def test_the_framework_flag_reads_the_rows_too():
    """--framework decides how the rows are read as well as the trainer facts (the rows were read as the detected
    framework's before): this TRL config read as axolotl's names no dataset, and the report says so."""
    args = (str(CONFIGS / "sft_long_row.yaml"), "--model", str(MODELS / "qwen2.5-0.5b"), "-f", "json")
    flagged = json.loads(memory(*args, "--framework", "axolotl").stdout)
    assert flagged["context"]["config"].endswith("(axolotl sft)")
    assert flagged["context"]["lengths"].startswith("every sequence at max_length (the rows were not read: ")
    assert "the config names no dataset" in flagged["context"]["lengths"]
    detected = json.loads(memory(*args).stdout)
    assert detected["context"]["lengths"].startswith("all 40 rows of ")
