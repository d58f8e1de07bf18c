"""Content parts of every form and per-message weights, under each framework (issue 34 item 1): the goldens of
tools/content_parts_goldens.py (fixtures/content-parts/: transformers' apply_chat_template, axolotl 0.19.0's
chat_template strategy, LLaMA-Factory 0.9.5's converter and processor) and what each framework's replay shares. Each
case inspects 15 rows with a real tokenizer (4-20 s on 2 shared cores): every case is in the slow tier."""

from __future__ import annotations

import json
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import FIXTURES

GOLDENS = FIXTURES / "content-parts"
ROWS = GOLDENS / "rows.json"
TOOL = "tools/content_parts_goldens.py"
WEIGHTED = (0, 6)  # rows with a per-message loss_weight


def inspect(framework: str, tokenizer: str, *flags: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["inspect-data", str(ROWS), "-t", str(FIXTURES / "tokenizers" / tokenizer),
                                      "--framework", framework, "--all", "--show", "100", "-f", "json", "--exit-zero",
                                      *flags], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8"))["cases"]


def cases(name: str) -> list[ParameterSet]:
    """One case per key of the golden file ``name``, each in the slow tier."""
    return [pytest.param(key, id=key, marks=pytest.mark.slow) for key in golden(name)]


def refused_rows(doc: dict[str, Any]) -> set[int]:
    """Rows mldebug says the framework cannot prepare (a finding on the row, and no ids shown)."""
    shown = {r["row"] for r in doc["rows"] if r.get("input_ids")}
    flagged = {f["location"].get("row") for f in doc["findings"] if f["severity"] == "error"}
    return flagged - shown


def agree(doc: dict[str, Any], cases: list[dict[str, Any]]) -> None:
    rows = {r["row"]: r for r in doc["rows"]}
    for index, want in enumerate(cases):
        if "input_ids" not in want:  # raised, or dropped: no ids trained
            assert index in refused_rows(doc), (index, want)
            continue
        assert rows[index]["input_ids"] == want["input_ids"], index
        assert rows[index]["labels"] == want["labels"], index


def weighted_rows(doc: dict[str, Any]) -> set[int]:
    """The rows DS066 names: a message's loss_weight the framework never reads."""
    return {f["location"]["row"] for f in doc["findings"] if f["code"] == "DS066"}
