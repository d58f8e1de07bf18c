"""Tokenizer folders from a hub: only --trust-remote-code ever runs code from them.

``fixtures/hostile/tokenizers/remote_code`` names ``tokenization_evil.py`` in ``auto_map``; importing that
module writes the file named by ``$MLDEBUG_MARKER``, so the marker is the proof that code ran.
"""

from __future__ import annotations

import json
import shutil

import pytest

from outcomes import HOSTILE, assert_one_line_error, run_cli, run_cli_process, unchanged
from support import ALPACA, QWEN25, needs_corpus

TOKENIZERS = HOSTILE / "tokenizers"
NEVER_RUNS = "mldebug never runs code from a model folder unless you pass --trust-remote-code"


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "remote-code-ran"
    monkeypatch.setenv("MLDEBUG_MARKER", str(path))
    return path


def remote_code_folder(tmp_path, tokenizer_class: str | None = None):
    """The hostile folder plus a real tokenizer.json (and, given a class name, a config naming a built-in class)."""
    folder = tmp_path / "remote_code"
    shutil.copytree(TOKENIZERS / "remote_code", folder)
    shutil.copy(QWEN25 / "tokenizer.json", folder / "tokenizer.json")
    if tokenizer_class:
        config = json.loads((QWEN25 / "tokenizer_config.json").read_text())
        config.update(json.loads((folder / "tokenizer_config.json").read_text()), tokenizer_class=tokenizer_class)
        (folder / "tokenizer_config.json").write_text(json.dumps(config))
    return folder


@needs_corpus
def test_a_folder_without_tokenizer_json_is_a_one_line_error():
    folder = TOKENIZERS / "no_tokenizer_json"
    with unchanged(folder):
        result = run_cli("inspect-data", ALPACA, "-t", folder, "--framework", "transformers", "--rows", "0")
    assert_one_line_error(
        result.exit_code, result.stderr,
        f"{folder}: no tokenizer in this folder (none of tokenizer.json, tokenizer.model, vocab.json, tekken.json, spiece.model)",
        hint="point --tokenizer at the folder that holds tokenizer.json and tokenizer_config.json",
    )


@needs_corpus
def test_auto_map_without_tokenizer_json_is_refused_before_transformers_sees_it(marker):
    folder = TOKENIZERS / "remote_code"
    with unchanged(folder):
        result = run_cli("inspect-data", ALPACA, "-t", folder, "--framework", "transformers", "--rows", "0")
    assert_one_line_error(
        result.exit_code, result.stderr,
        f"{folder}: tokenizer_config.json asks for remote code (auto_map) and there is no tokenizer.json",
        hint=NEVER_RUNS,
    )
    assert not marker.exists()


@needs_corpus
def test_auto_map_to_an_unknown_class_is_refused_by_transformers(tmp_path, marker):
    folder = remote_code_folder(tmp_path)
    with unchanged(folder):
        result = run_cli("inspect-data", ALPACA, "-t", folder, "--framework", "transformers", "--rows", "0")
    assert result.exit_code == 2 and len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith(
        f"Error: {folder}: cannot load a tokenizer: ValueError: The repository {folder} contains custom code which "
        "must be executed to correctly load the model."
    )
    assert not marker.exists()


@needs_corpus
def test_auto_map_beside_a_built_in_class_loads_the_built_in_class_and_runs_nothing(tmp_path, marker):
    folder = remote_code_folder(tmp_path, "Qwen2Tokenizer")
    with unchanged(folder):
        result = run_cli("inspect-data", ALPACA, "-t", folder, "--framework", "transformers", "--rows", "0", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["rows"][0]["prompt"].startswith("<|im_start|>system\n")
    assert not marker.exists()


@needs_corpus
def test_the_same_folder_runs_its_code_only_with_trust_remote_code(tmp_path):
    """The control: the payload is live, and the flag is what lets it run."""
    folder = remote_code_folder(tmp_path, "Qwen2Tokenizer")
    marker = tmp_path / "remote-code-ran"
    env = {"MLDEBUG_MARKER": str(marker), "HF_MODULES_CACHE": str(tmp_path / "modules")}
    code, _, stderr, _ = run_cli_process("inspect-data", ALPACA, "-t", folder, "--framework", "transformers", "--rows", "0", "-f", "json",
                                         "--trust-remote-code", env=env)
    assert code == 0, stderr
    assert marker.read_text() == "remote code ran"
