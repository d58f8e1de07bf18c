"""A new user's first minutes: flags checked before anything loads, where the report went, "did you mean"."""

from __future__ import annotations

import json
import os
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


# ---------------------------------------------------------------- offline by default


def _one_line(result, message: str, hint: str | None = None) -> None:
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == f"Error: {message}", result.stderr
    if hint is not None:
        assert lines[1] == f"Hint: {hint}"


OFFLINE_HINT = "fetch it with `hf download {spec}{flag}`, or pass --online (or set MLDEBUG_ONLINE=1) to let mldebug download it"


def test_a_mistyped_local_tokenizer_path_is_no_such_folder(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()  # `models/nonexistent` is a path here, not a hub id
    result = run("inspect-data", _chat(tmp_path), "--tokenizer", "models/nonexistent")
    _one_line(result, "models/nonexistent: no such folder")


def test_a_hub_id_that_is_not_cached_says_so_and_how_to_fetch_it(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))  # an empty cache
    monkeypatch.delenv("MLDEBUG_ONLINE", raising=False)
    spec = "mldebug-tests/not-cached-model"
    result = run("inspect-data", _chat(tmp_path), "--tokenizer", spec)
    _one_line(result, f"{spec}: not a local tokenizer and not in the local Hugging Face cache (mldebug runs offline)",
              OFFLINE_HINT.format(spec=spec, flag=""))
    data = run("inspect-data", "mldebug-tests/not-cached-data", "--tokenizer", QWEN25)
    _one_line(data, "mldebug-tests/not-cached-data: not a local dataset and not in the local Hugging Face cache "
              "(mldebug runs offline)", OFFLINE_HINT.format(spec="mldebug-tests/not-cached-data", flag=" --repo-type dataset"))


def test_a_missing_dataset_file_in_a_config_names_the_key_and_fails_before_the_tokenizer_loads(tmp_path: Path):
    config = tmp_path / "config.yml"
    # the tokenizer is not there either: the dataset's error coming first shows it was checked before the load
    config.write_text("base_model: ./no-tokenizer\ndatasets:\n  - path: data/missing.jsonl\n    type: chat_template\n"
                      "micro_batch_size: 1\nnum_epochs: 1\nlearning_rate: 0.0001\n", encoding="utf-8")
    result = run("preflight", config)
    _one_line(result, f"{config}:3: datasets.0.path: data/missing.jsonl: no such file or folder")


def test_online_lets_the_loader_try_the_hub_instead_of_refusing(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MLDEBUG_ONLINE", "0")  # restored after the test: --online sets it for the process
    spec = "mldebug-tests/not-cached-model"
    result = run("inspect-data", _chat(tmp_path), "--tokenizer", spec, "--online")
    # the test environment has HF_HUB_OFFLINE=1, so the download itself fails: transformers' error, not the refusal
    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {spec}: cannot load a tokenizer"), result.stderr


def test_loaders_are_offline_unless_asked(monkeypatch):
    from mldebug_cli.sources import hub

    monkeypatch.delenv("MLDEBUG_ONLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    hub.stay_offline()
    assert os.environ["HF_HUB_OFFLINE"] == os.environ["HF_DATASETS_OFFLINE"] == "1" and constants.HF_HUB_OFFLINE is True


def test_what_looks_like_a_path(tmp_path: Path, monkeypatch):
    from mldebug_cli.sources.hub import looks_like_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    assert looks_like_path("models/nonexistent") and looks_like_path("./x") and looks_like_path("data/train.jsonl")
    assert looks_like_path("a/b/c") and looks_like_path("~/x")
    assert not looks_like_path("Qwen/Qwen2.5-0.5B-Instruct") and not looks_like_path("gpt2")


# ---------------------------------------------------------------- the first screen


def _ranked_rows(tmp_path: Path) -> Path:
    """Rows 0-3: a role the template never mentions (DS011); row 4: a prompt so long that truncation to 60 tokens
    leaves nothing trained (DS001, all labels -100)."""
    odd = [{"messages": [{"role": "narrator", "content": f"Scene {i}."}, {"role": "user", "content": "Go on."},
                         {"role": "assistant", "content": "The door opens."}]} for i in range(4)]
    long_prompt = {"messages": [{"role": "user", "content": "Describe the harbour at dawn in detail. " * 12},
                                {"role": "assistant", "content": "Grey water, gulls, and one red boat."}]}
    return write_jsonl(tmp_path / "ranked.jsonl", [*odd, long_prompt])


def test_the_most_serious_rows_are_shown_first(tmp_path: Path):
    """An all -100 row is shown before DS011 rows that come earlier in the file (was: the first flagged by index)."""
    result = run("inspect-data", _ranked_rows(tmp_path), "-t", QWEN25, "--max-length", "60", "--train-on", "assistant",
                 "-f", "json", "--exit-zero")
    doc = json.loads(result.stdout)
    codes = {f["location"].get("row"): f["code"] for f in doc["findings"] if f["code"] in ("DS001", "DS011")}
    assert codes == {0: "DS011", 1: "DS011", 2: "DS011", 3: "DS011", 4: "DS001"}
    assert [r["row"] for r in doc["rows"]] == [4, 0]


def test_the_first_screen_is_the_verdict_and_findings_and_the_token_table_is_asked_for(tmp_path: Path):
    path = _ranked_rows(tmp_path)
    common = ("-t", QWEN25, "--max-length", "60", "--train-on", "assistant", "--color", "never", "--exit-zero")
    out = run("inspect-data", path, *common).stdout
    lines = out.splitlines()
    assert lines[0] == "mldebug inspect-data: 6 errors  1 info  in 4 checks", lines[0]  # the info: DS015, TRL swaps its template
    summary = lines.index("Summary")
    first_row = next(i for i, line in enumerate(lines) if i > summary and line.startswith("row "))
    assert lines.index("Findings") < summary < first_row <= 60
    assert lines[first_row].startswith("row 4 ") and "DS001" in lines[first_row]
    assert "⟦" in out and "Rendered prompt" not in out and " pos " not in out  # prompt with the labels, no table
    for flags in (["--tokens"], ["--rows", "4"]):
        full = run("inspect-data", path, *common, *flags)
        assert "Rendered prompt" in full.stdout and "label" in full.stdout, flags


def test_preflight_shows_the_findings_then_the_most_serious_row():
    out = run("preflight", FIXTURES / "preflight" / "axolotl" / "config.yml", "--color", "never").stdout
    lines = out.splitlines()
    assert lines[0].startswith("mldebug preflight: 1 error")
    shown = next(i for i, line in enumerate(lines) if "the most serious row" in line)
    assert lines.index("Findings") < shown and lines[shown + 1].startswith("row 17 (line 18)")  # DS010: an error
    assert "Rendered prompt" not in out


def test_a_cached_hub_id_loads_offline(tmp_path: Path):
    """The local cache is still used: a hub id whose snapshot is there loads without the network (a child process:
    transformers reads the cache folder once, at import)."""
    import shutil
    import subprocess
    import sys

    cache = tmp_path / "hub"
    repo = cache / "models--mldebug-tests--qwen-copy"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(QWEN25, snapshot)
    (snapshot / "config.json").write_text('{"model_type": "qwen2"}', encoding="utf-8")  # a hub repo has one
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MLDEBUG_ONLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    env.update(HF_HUB_CACHE=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run([sys.executable, "-m", "mldebug_cli", "inspect-data", str(_chat(tmp_path)), "-t",
                           "mldebug-tests/qwen-copy", "-f", "json", "--exit-zero"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["context"]["tokenizer"] == "mldebug-tests/qwen-copy"
