"""Unsloth's goldens (tools/unsloth_goldens.py): the labels the real unsloth_zoo 2026.10.9 train_on_responses_only
gives TRL 1.16.0's prepared ids of fixtures/trl-1.16.0/rows-messages.json, and the rows it leaves with nothing to
train (Unsloth drops them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from typer.testing import CliRunner

from goldens.suite import GoldenSuite
from mldebug_cli.cli import app
from support import FIXTURES, TOKENIZERS

GOLDENS_FILE = FIXTURES / "unsloth-2026.10.9" / "goldens.json"
GOLDENS: dict[str, Any] = json.loads(GOLDENS_FILE.read_text(encoding="utf-8"))
ROWS = FIXTURES / "trl-1.16.0" / "rows-messages.json"


def case_id(case: dict[str, Any]) -> str:
    return f"{case['tokenizer']}-{case['trl_setting']}-{case['variant']}"


def cases() -> list[ParameterSet]:
    return [pytest.param(case, id=case_id(case)) for case in GOLDENS["cases"]]


def replay(case: dict[str, Any], tmp_path: Path) -> None:
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


SUITES = (
    GoldenSuite("unsloth-labels", "unsloth", "tools/unsloth_goldens.py",
                "UNSLOTH_ZOO_DISABLE_GPU_INIT=1 HF_HUB_OFFLINE=1 python tools/unsloth_goldens.py", GOLDENS_FILE,
                cases, replay),
)
