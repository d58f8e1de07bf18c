"""--framework unsloth against Unsloth itself: train_on_responses_only's labels, row for row.

The goldens (fixtures/unsloth-2026.10.9/goldens.json, written by tools/unsloth_goldens.py) are the labels the real
unsloth_zoo 2026.10.9 function gives TRL 1.16.0's prepared ids of fixtures/trl-1.16.0/rows-messages.json, and the rows
it leaves with nothing to train (Unsloth drops them).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES, TOKENIZERS

GOLDENS = json.loads((FIXTURES / "unsloth-2026.10.9" / "goldens.json").read_text(encoding="utf-8"))
ROWS = FIXTURES / "trl-1.16.0" / "rows-messages.json"


def case_id(case: dict) -> str:
    return f"{case['tokenizer']}-{case['trl_setting']}-{case['variant']}"


@pytest.mark.replay
@pytest.mark.parametrize("case", GOLDENS["cases"], ids=case_id)
def test_labels_and_dropped_rows_equal_unsloths_own(case):
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS), "-t", str(TOKENIZERS / case["tokenizer"]),
                                      "--framework", "unsloth", *case["inspect_flags"], "--rows", "0-6",
                                      "-f", "json", "--exit-zero"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    dropped = sorted(r["row"] for r in doc["rows"] if r.get("dropped"))
    assert dropped == case["dropped"]
    ours = {r["row"]: (r["input_ids"], r["labels"]) for r in doc["rows"] if not r.get("dropped")}
    assert ours == {r["row"]: (r["input_ids"], r["labels"]) for r in case["rows"]}
    assert doc["summary"]["rows_dropped"] == len(case["dropped"])
    assert "Unsloth train_on_responses_only" in doc["context"]["train_on"]


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
