"""LLaMA-Factory's templates by name, its settings from a config and the command line, and what it refuses."""

from __future__ import annotations

import importlib.util
import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.frameworks.llama_factory import templates as lft
from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import CORPUS, NEMO, QWEN3, QWEN25, ROOT, needs_corpus

ROWS = ROOT / "fixtures" / "llamafactory-rows"


def inspect(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["inspect-data", *args, "-f", "json", "--exit-zero"])
    return result.exit_code, (json.loads(result.stdout) if result.exit_code == 0 else {"output": result.output})


def codes(report: dict) -> set[str]:
    return {f["code"] for f in report["findings"]}


def test_unknown_template_is_one_line_with_close_names():
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS / "sharegpt.json"), "-t", str(QWEN3),
                                      "--framework", "llama-factory", "--template", "qwen_3"])
    assert result.exit_code == 2
    assert "no template 'qwen_3'; did you mean qwen3, qwen" in result.output and "Traceback" not in result.output


def test_template_needs_the_llama_factory_framework():
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS / "sharegpt.json"), "-t", str(QWEN3), "--template", "qwen3"])
    assert result.exit_code == 2 and "--framework llama-factory" in result.output


def test_a_template_llama_factory_has_but_mldebug_does_not_emulate_is_a_finding():
    status, report = inspect(str(ROWS / "sharegpt.json"), "-t", str(QWEN25), "--framework", "llama-factory",
                             "--template", "qwen3_vl", "--rows", "0")
    assert status == 0
    [gap] = [f for f in report["findings"] if f["code"] == "DS026"]
    assert "'qwen3_vl' is LLaMA-Factory's, but mldebug does not emulate it" in gap["message"]
    status, report = inspect(str(ROWS / "sharegpt.json"), "-t", str(QWEN25), "--framework", "llama-factory",
                             "--template", "qwen", "--rows", "0")
    assert "DS026" not in codes(report)


def test_without_a_template_the_tokenizer_template_is_parsed_and_said():
    status, report = inspect(str(ROWS / "sharegpt.json"), "-t", str(QWEN25), "--framework", "llama-factory", "--rows", "0")
    assert status == 0
    assert "parsed from the tokenizer's chat template, as LLaMA-Factory does" in report["context"]["framework"]
    # Qwen2.5's template inserts its default system prompt: parse_template finds it
    assert report["rows"][0]["prompt"].startswith("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.")


def test_rows_the_converter_refuses_are_reported_as_dropped():
    status, report = inspect(str(ROWS / "sharegpt.json"), "-t", str(QWEN25), "--framework", "llama-factory",
                             "--template", "qwen", "--rows", "6,7")
    messages = sorted(f["message"] for f in report["findings"] if f["code"] == "DS010")
    assert len(messages) == 2 and all("drops the row" in m for m in messages)
    assert "Invalid message count" in messages[0] and "Invalid role tag" in messages[1]
    assert report["summary"]["rows_dropped"] == 2  # left out of training: preflight's step count does not count them


def test_mistral_rows_with_a_system_message_train_their_eos():
    """The issue's DS004 false alarm: Nemo's own template masked </s>; LLaMA-Factory's mistral template trains it."""
    status, report = inspect(str(ROWS / "sharegpt.json"), "-t", str(NEMO), "--framework", "llama-factory",
                             "--template", "mistral", "--all")
    assert status == 0 and "DS004" not in codes(report)


def test_efficient_eos_template_refuses_train_on_prompt():
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS / "sharegpt.json"), "-t", str(QWEN25), "--framework",
                                      "llama-factory", "--template", "glm4", "--train-on", "all"])
    assert result.exit_code == 2 and "does not support `train_on_prompt`" in result.output


def test_config_settings_reach_the_rows(tmp_path):
    config = tmp_path / "lf.yaml"
    config.write_text(f"model_name_or_path: {QWEN3}\nstage: sft\ndo_train: true\ndataset: lf_sharegpt\n"
                      f"dataset_dir: {ROWS}\ntemplate: qwen3\nenable_thinking: false\nmask_history: true\n"
                      "cutoff_len: 64\nneat_packing: true\nlearning_rate: 1.0e-4\n")
    result = CliRunner().invoke(app, ["preflight", str(config), "--allow-outside-paths", "--all", "-f", "json",
                                      "--exit-zero"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    data = report["sections"][0]
    assert data["context"]["max_length"] == 64
    assert "template 'qwen3'" in report["context"]["notes"]
    gap = next(f for f in report["findings"] if f["code"] == "DS026")
    assert gap["location"]["line"] == 10 and "neat_packing" in gap["message"]
    assert "mask_history: last reply only" in data["context"]["train_on"]


def test_mask_history_with_train_on_prompt_is_refused(tmp_path):
    config = tmp_path / "lf.yaml"
    config.write_text(f"model_name_or_path: {QWEN25}\nstage: sft\ndataset: lf_alpaca\ndataset_dir: {ROWS}\ntemplate: qwen\n"
                      "train_on_prompt: true\nmask_history: true\nlearning_rate: 1.0e-4\n")
    result = CliRunner().invoke(app, ["preflight", str(config), "--allow-outside-paths"])
    assert result.exit_code == 2 and "`mask_history` is incompatible with `train_on_prompt`" in result.output


@needs_corpus
def test_glaive_demo_with_qwen3_has_no_history_rewrites():
    """The issue's 156 DS014 warnings: LLaMA-Factory encodes each turn with its qwen3 slots, nothing is rewritten;
    the end-of-turn token is trained wherever cutoff_len leaves the reply whole."""
    report = build_report(InspectOptions(dataset=str(CORPUS / "datasets" / "llama-factory" / "glaive_toolcall_en_demo.json"),
                                         tokenizer=str(QWEN3), framework="llama-factory", sample=60,
                                         framework_options=LlamaFactoryOptions(template="qwen3")))
    rows = {code: {f.location.row for f in report.findings if f.code == code} for code in ("DS004", "DS007", "DS014")}
    assert not rows["DS014"] and rows["DS004"] <= rows["DS007"]


def test_registered_names_match_the_installed_llama_factory():
    if importlib.util.find_spec("llamafactory") is None:
        pytest.skip("llamafactory 0.9.5 is not installed (it caps transformers at 5.6): nothing to compare with")
    from llamafactory.data.template import TEMPLATES

    assert tuple(sorted(TEMPLATES)) == lft.REGISTERED


def test_every_emulated_template_is_registered_in_llama_factory():
    assert set(lft.TEMPLATES) <= set(lft.REGISTERED)
