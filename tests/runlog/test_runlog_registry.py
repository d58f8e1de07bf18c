"""The run-log format registry: one line per format, and everything that names formats generated from it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.sources.runlog import detect, read_run, registry
from mldebug_cli.sources.runlog.format import RunLogFormat


def test_each_line_names_a_module_exporting_its_format():
    assert registry.FORMATS == ("trainer-state", "jsonl", "console", "tensorboard", "wandb", "csv", "mlflow",
                                "torchtune")
    for entry in registry.REGISTRY:
        fmt = registry.runlog_format(entry.name)
        assert isinstance(fmt, RunLogFormat), entry.name
        assert (entry.folder is None) == (fmt.in_folder is None), f"{entry.name}: a folder rank needs in_folder"
        assert (entry.file is None) == (fmt.sniff is None), f"{entry.name}: a file rank needs sniff"
        assert (entry.in_folder is None) == (entry.folder is None), f"{entry.name}: the error must name what it seeks"


def test_the_detection_orders():
    """Pinned: a new format's place in them is a decision (the first sniff that says yes wins)."""
    assert registry.BY_FOLDER == ("trainer-state", "jsonl", "tensorboard", "wandb", "mlflow", "torchtune")
    assert registry.BY_FILE == ("wandb", "mlflow", "tensorboard", "jsonl", "trainer-state", "csv", "torchtune",
                                "console")
    ranks = [e.file for e in registry.REGISTRY if e.file is not None]
    assert len(set(ranks)) == len(ranks)
    assert registry.BY_FILE[-1] == "console", "the console takes any text: it sniffs last"


def test_help_and_errors_are_generated_from_the_lines():
    output = CliRunner().invoke(app, ["check-run", "--help"], env={"NO_COLOR": "1"}).output
    help_text = " ".join(output.split())  # as wrapped for the terminal
    assert registry.format_help() in help_text and registry.run_help() in help_text
    assert registry.format_help() == ("trainer-state, jsonl, console, tensorboard, wandb, csv, mlflow or torchtune "
                                      "(default: detected).")


def test_an_unknown_format_names_the_registry(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("{'loss': 1.0}\n")
    with pytest.raises(UsageError) as caught:
        read_run(log, "tensorbord")
    assert caught.value.hint == f"choose one of {', '.join(registry.FORMATS)}"


def test_an_empty_folder_says_what_each_format_looks_for(tmp_path):
    with pytest.raises(InputError) as caught:
        detect(tmp_path)
    assert caught.value.message == (
        f"{tmp_path}: no trainer_state.json, checkpoint-*/, trainer_log.jsonl, TensorBoard event file, .wandb file, "
        "MLflow store (mlruns/, mlflow.db) or torchtune log_*.txt in this folder")


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("run.jsonl", '{"loss": 1.0, "current_steps": 1}\n', "jsonl"),
    ("trainer_state.json", json.dumps({"log_history": [{"loss": 1.0, "step": 1}]}, indent=2), "trainer-state"),
    ("log_1.txt", "Step 1 | loss:1.0\n", "torchtune"),
    ("export.csv", "Step,loss\n1,1.0\n", "csv"),
    ("train.log", "{'loss': 1.0, 'epoch': 0.1}\n", "console"),
])
def test_a_file_is_sniffed_by_the_formats_in_order(tmp_path, name, text, expected):
    path = tmp_path / name
    path.write_text(text)
    assert detect(path) == (expected, path)


def test_binary_bytes_in_no_format_are_an_error_naming_the_formats(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputError) as caught:
        detect(path)
    assert caught.value.hint == f"pass --format to say what it is ({', '.join(registry.FORMATS)})"
