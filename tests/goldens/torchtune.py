"""torchtune 0.6.1's goldens (tools/torchtune_goldens.py, on generated rows): input_ids and labels row for row, and the
rows torchtune refuses."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from goldens.suite import GoldenSuite
from mldebug_cli.frameworks.torchtune.data import Flags
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import ROOT, TOKENIZERS, first_difference

GOLDENS = ROOT / "fixtures" / "torchtune-0.6.1"
DATASETS = {"openai": ("messages", "chat"), "sharegpt": ("sharegpt", "chat"), "instruct": ("alpaca", "instruct"),
            "alpaca": ("alpaca", "alpaca")}


def golden(style: str) -> dict[str, Any]:
    with gzip.open(GOLDENS / f"{style}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def cases() -> list[ParameterSet]:
    return [pytest.param((style, setting), id=f"{style}-{setting}") for style in DATASETS for setting in golden(style)["settings"]]


def inspect_options(style: str, arguments: dict[str, Any], dataset: str) -> InspectOptions:
    row_format, builder = DATASETS[style]
    train_on = None if "train_on_input" not in arguments else "all" if arguments["train_on_input"] else "assistant"
    return InspectOptions(dataset=dataset, tokenizer=str(TOKENIZERS / "qwen2.5-instruct"), data_format=row_format,
                          framework="torchtune", train_on=train_on, max_length=arguments.get("max_seq_len"),
                          framework_flags=Flags(dataset=builder, system_prompt=arguments.get("new_system_prompt")),
                          show=0, workers=1)


def compare(style: str, setting: str, tmp_path: Path) -> tuple[int, int, list[str]]:
    """(matched rows, rows, first differences) of mldebug against one golden setting."""
    doc = golden(style)
    rows = tmp_path / f"{style}.jsonl"
    rows.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in doc["rows"]), encoding="utf-8")
    expected = doc["settings"][setting]
    options = inspect_options(style, expected["arguments"], str(rows))
    views = {v["row"]: v for v in build_report(replace(options, rows=tuple(range(len(doc["rows"]))))).details["rows"]}
    matched, problems = 0, []
    for i, want in enumerate(expected["rows"]):
        view = views[i]
        if "mldebug does not emulate image rows" in (view.get("error") or ""):  # refused as not emulated
            same = _has_image(doc["rows"][i])
        elif "error" in want:  # torchtune raises on the row: mldebug names the same exception on it
            same = f"({want['error']}:" in (view.get("error") or "")
        else:
            same = view.get("error") is None and view["input_ids"] == want["input_ids"] and view["labels"] == want["labels"]
        matched += same
        if not same:
            problems.append(f"row {i}: {view.get('error') or first_difference(view, want)} (want {want.get('error')})")
    return matched, len(expected["rows"]), problems


def _has_image(row: dict[str, Any]) -> bool:
    return "image" in row or "image_url" in json.dumps(row)


def replay(case: tuple[str, str], tmp_path: Path) -> None:
    matched, total, problems = compare(*case, tmp_path)
    assert matched == total, problems[:3]


SUITES = (
    GoldenSuite("torchtune-rows", "torchtune", "tools/torchtune_goldens.py",
                "/work/venvs/torchtune/bin/python tools/torchtune_goldens.py", GOLDENS, cases, replay),
)
