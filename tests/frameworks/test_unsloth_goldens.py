"""--framework unsloth: the goldens of Unsloth's own train_on_responses_only (tools/unsloth_goldens.py, replayed row
for row by tests/goldens/, suite unsloth-labels) are worth comparing with, and the parts Unsloth refuses or mldebug
cannot place are one-line errors."""

from __future__ import annotations

import json

import pytest
from goldens.unsloth import GOLDENS, ROWS, case_id
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import TOKENIZERS


def test_the_goldens_train_something_and_mask_something():
    """The goldens are worth comparing with: every case trains some tokens and masks others, in several rows."""
    for case in GOLDENS["cases"]:
        if case["variant"] == "mistyped_response_part":  # trains nothing on purpose: every row dropped
            continue
        labels = [label for row in case["rows"] for label in row["labels"]]
        assert -100 in labels and any(label != -100 for label in labels), case_id(case)
    last = {case_id(c): c for c in GOLDENS["cases"]}
    assert last["qwen2.5-instruct-default-responses"]["rows"] != last["qwen2.5-instruct-default-last_response_only"]["rows"]


@pytest.mark.parametrize("flags, error", [
    (["--instruction-part", "<|im_start|>user\\n"], "Error: give both --instruction-part and --response-part"),
    (["--framework", "trl", "--instruction-part", "<|im_start|>user\\n", "--response-part", "<|im_start|>assistant\\n"],
     "Error: --instruction-part/--response-part are Unsloth's, not trl's"),
    (["--framework", "unsloth"], "Error: --framework unsloth needs --instruction-part and --response-part"),
    (["--instruction-part", "<|im_start|>user\\n", "--response-part", "<|im_start|>assistant\\n", "--train-on", "all"],
     "Error: --framework unsloth trains the responses (--train-on assistant) or the last one (last), not all"),
    (["--instruction-part", "<|im_start|>user\\n", "--response-part", ""],
     "Error: Unsloth refuses these parts: response_part '' tokenizes to nothing"),
])
def test_parts_unsloth_would_refuse_or_mldebug_cannot_place_are_one_line_errors(flags, error):
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS), "-t", str(TOKENIZERS / "qwen2.5-instruct"), *flags])
    assert result.exit_code == 2 and result.stderr.splitlines()[0].startswith(error), result.output


def test_escaped_newlines_in_the_parts_read_as_newlines():
    """A shell passes '\\n' as two characters; the parts are the Python strings Unsloth's notebooks write."""
    case = next(c for c in GOLDENS["cases"] if case_id(c) == "qwen2.5-instruct-default-responses")
    escaped = ["--instruction-part", "<|im_start|>user\\n", "--response-part", "<|im_start|>assistant\\n"]
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS), "-t", str(TOKENIZERS / "qwen2.5-instruct"), *escaped,
                                      "--rows", "0-6", "-f", "json"])
    labels = {r["row"]: r["labels"] for r in json.loads(result.stdout)["rows"]}
    assert labels == {r["row"]: r["labels"] for r in case["rows"]}


def test_a_named_unsloth_template_without_unsloth_installed_says_what_is_missing():
    import importlib.util

    if importlib.util.find_spec("unsloth") is not None:
        pytest.skip("unsloth is installed here: the template is read from it")
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS), "-t", str(TOKENIZERS / "llama3-instruct"),
                                      "--unsloth-template", "llama-3.1", "--instruction-part", "x", "--response-part", "y"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == ("Error: --unsloth-template llama-3.1: needs the unsloth package, which is "
                                             "not installed: mldebug reads Unsloth's templates from it")
