"""Content parts of every form and per-message weights, under each framework (issue 34 item 1): mldebug's ids and
labels equal what the framework's own code gave (fixtures/content-parts/, written by tools/content_parts_goldens.py:
transformers' apply_chat_template, axolotl 0.19.0's chat_template strategy, LLaMA-Factory 0.9.5's converter and
processor), and where that code raises, mldebug says the row cannot be prepared."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES

GOLDENS = FIXTURES / "content-parts"
ROWS = GOLDENS / "rows.json"
WEIGHTED = (0, 6)  # rows with a per-message loss_weight
runner = CliRunner()
pytestmark = pytest.mark.slow  # each case inspects 15 rows with a real tokenizer: 4-20 s on 2 shared cores


def inspect(framework: str, tokenizer: str, *flags: str) -> dict:
    result = runner.invoke(app, ["inspect-data", str(ROWS), "-t", str(FIXTURES / "tokenizers" / tokenizer),
                                 "--framework", framework, "--all", "--show", "100", "-f", "json", "--exit-zero", *flags],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def golden(name: str) -> dict:
    return json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8"))["cases"]


def refused_rows(doc: dict) -> set[int]:
    """Rows mldebug says the framework cannot prepare (a finding on the row, and no ids shown)."""
    shown = {r["row"] for r in doc["rows"] if r.get("input_ids")}
    flagged = {f["location"].get("row") for f in doc["findings"] if f["severity"] == "error"}
    return flagged - shown


def replay(doc: dict, cases: list[dict], ids_only: tuple[int, ...] = ()) -> None:
    rows = {r["row"]: r for r in doc["rows"]}
    for index, want in enumerate(cases):
        if "input_ids" not in want:  # raised, or dropped: no ids trained
            assert index in refused_rows(doc), (index, want)
            continue
        assert rows[index]["input_ids"] == want["input_ids"], index
        if index not in ids_only:
            assert rows[index]["labels"] == want["labels"], index


@pytest.mark.parametrize("tokenizer", list(golden("transformers")))
def test_transformers_hands_every_part_form_to_the_template_as_apply_chat_template_does(tokenizer):
    """A bare Trainer's user calls apply_chat_template on the messages as they are: Llama 3 prints each list's repr
    (trained), Qwen2.5, Qwen3 and Mistral-Nemo raise on every list; rows without an assistant turn are trained whole."""
    doc = inspect("transformers", tokenizer)
    replay(doc, golden("transformers")[tokenizer])
    assert {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS066"} == set(WEIGHTED)


@pytest.mark.parametrize("tokenizer", list(golden("axolotl")))
def test_axolotl_flattens_parts_and_ignores_message_weights_as_its_chat_template_strategy_does(tokenizer):
    """axolotl joins each part's text/content/value (an image part adds nothing) and never reads a message's
    loss_weight (DS066). Its per-part train/weight flags mask part of a turn, token by token (rows 7 and 8). A row
    with nothing trained (no assistant turn, nothing flagged) is masked as any other and then dropped: the same ids
    and labels, and an error on the row."""
    doc = inspect("axolotl", tokenizer)
    cases = golden("axolotl")[tokenizer]
    replay(doc, cases)
    untrained = {i for i, c in enumerate(cases) if "labels" in c and all(label == -100 for label in c["labels"])}
    assert untrained and untrained <= {f["location"].get("row") for f in doc["findings"] if f["severity"] == "error"}
    assert {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS066"} == set(WEIGHTED)


@pytest.mark.parametrize("case", list(golden("llamafactory")))
def test_llama_factory_refuses_parts_and_ignores_message_weights_as_its_converter_does(case):
    """`llamafactory-cli train` (v0 data path): any list content stops the run (its template formatters, or
    datasets' loader on mixed content types); a string row's loss_weight is never read (DS066)."""
    template, tokenizer = case.split(":")
    doc = inspect("llama-factory", tokenizer, "--template", template)
    replay(doc, golden("llamafactory")[case])
    assert {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS066"} == {6}
