"""A new user's first minutes: flags checked before anything loads, where the report went, "did you mean"."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, QWEN25, write_jsonl

runner = CliRunner()
HF_JSON = FIXTURES / "configs" / "hf_training_args.json"


def run(*args: object):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _chat(tmp_path: Path) -> Path:
    rows = [{"messages": [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "7"}]}]
    return write_jsonl(tmp_path / "chat.jsonl", rows)


def test_an_unknown_output_format_fails_before_the_tokenizer_or_dataset_is_read(tmp_path: Path):
    # the tokenizer folder does not exist: the format error coming first proves nothing was loaded before it
    result = run("inspect-data", tmp_path / "missing.jsonl", "-t", tmp_path / "no-tokenizer", "-f", "yaml")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --output-format: unknown format 'yaml'"), result.stderr
    lr = run("lr-plot", "--config", tmp_path / "missing.json", "-f", "yaml")
    assert lr.exit_code == 2 and "unknown format 'yaml'" in lr.stderr


def test_an_engine_that_cannot_serve_the_source_fails_before_the_tokenizer_loads(tmp_path: Path):
    messages = tmp_path / "m.json"
    messages.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    result = run("render", "-m", messages, "--engine", "ollama", "-t", tmp_path / "no-tokenizer")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --engine ollama cannot serve a tokenizer"), result.stderr


def test_output_file_is_named_on_stderr(tmp_path: Path):
    report = tmp_path / "report.json"
    result = run("inspect-data", _chat(tmp_path), "-t", QWEN25, "-f", "json", "-o", report, "--exit-zero")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and json.loads(report.read_text())["command"] == "inspect-data"
    assert f"json report written to {report}" in result.stderr


def test_explain_suggests_the_check_a_partial_or_misspelled_name_means():
    partial = run("explain", "stop-token")
    assert partial.exit_code == 2 and "did you mean: stop-token-not-trained" in partial.stderr
    typo = run("explain", "eos-mismatc")
    assert "did you mean: eos-mismatch" in typo.stderr
    assert "did you mean" not in run("explain", "zzzz").stderr
