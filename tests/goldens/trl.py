"""TRL 1.16.0's goldens: SFTTrainer's ids, labels and dropped rows (tools/trl_goldens.py), the preference trainers'
rows and GRPOTrainer's step counts (tools/trl_preference_goldens.py), and the vision collators' (trl_vision.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from typer.testing import CliRunner

from goldens import trl_vision
from goldens.suite import GoldenSuite
from mldebug_cli.cli import app
from mldebug_cli.core.findings import Report
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.pipelines.schedule import build_report as schedule_report
from support import CORPUS, FIXTURES, TOKENIZERS, needs_corpus

GOLDENS = FIXTURES / "trl-1.16.0"
# Differences accepted on purpose: rows file -> (the rows that differ, why). Listed in docs/frameworks/trl.md, "What
# --framework trl emulates". The replay fails when they stop differing, so the list stays true.
ACCEPTED: dict[str, tuple[set[int], str]] = {}  # none: ShareGPT rows are read as TRL reads them (tags kept as roles)


def sft_cases() -> list[ParameterSet]:
    cases = []
    for path in sorted(GOLDENS.glob("goldens-*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        corpus = golden.get("corpus_tokenizer")
        marks = [needs_corpus] if corpus else []
        for setting in golden["settings"]:
            name = f"{golden['tokenizer']}:{setting['rows_file'].removeprefix('rows-').removesuffix('.json')}:{setting['setting']}"
            cases.append(pytest.param((golden["tokenizer"], corpus, setting), id=name, marks=marks))
    return cases


def inspect(tokenizer: str, corpus: str | None, setting: dict[str, Any]) -> dict[str, Any]:
    folder = CORPUS / corpus if corpus else TOKENIZERS / tokenizer
    rows = json.loads((GOLDENS / setting["rows_file"]).read_text(encoding="utf-8"))
    args = ["inspect-data", str(GOLDENS / setting["rows_file"]), "-t", str(folder), "--framework", "trl",
            *setting["inspect_flags"], "--rows", f"0-{len(rows) - 1}", "-f", "json"]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    return json.loads(result.stdout)


def mismatches(doc: dict[str, Any], setting: dict[str, Any]) -> list[str]:
    """Rows where mldebug and TRL differ (ids, labels, or whether the row is dropped)."""
    got = {r["row"]: r for r in doc["rows"]}
    problems = []
    for row in setting["dropped"]:
        if not got[row].get("dropped"):
            problems.append(f"row {row}: TRL drops it, mldebug keeps it")
    for want in setting["rows"]:
        row = got[want["row"]]
        if row.get("dropped"):
            problems.append(f"row {want['row']}: TRL keeps it, mldebug drops it")
        elif row["input_ids"] != want["input_ids"]:
            problems.append(f"row {want['row']}: input_ids differ")
        elif row["labels"] != want["labels"]:
            problems.append(f"row {want['row']}: labels differ")
    return problems


def replay_sft(case: tuple[str, str | None, dict[str, Any]], tmp_path: Path) -> None:
    tokenizer, corpus, setting = case
    doc = inspect(tokenizer, corpus, setting)
    if setting["rows_file"] in ACCEPTED:
        differing, _ = ACCEPTED[setting["rows_file"]]
        if "error" in setting:  # the template refuses TRL's unmapped roles; mldebug renders the mapped ones
            assert not any(f["code"] == "DS009" for f in doc["findings"])
            return
        assert {int(p.split()[1].rstrip(":")) for p in mismatches(doc, setting)} == differing
        return
    if "error" in setting and "TemplateError" in setting["error"]:  # the template raises on the row: so does TRL
        assert any(f["code"] == "DS009" for f in doc["findings"]), doc["findings"]
        return
    if "error" in setting:  # SFTTrainer refuses the setting: mldebug says so, as an error
        refusals = [f for f in doc["findings"] if f["code"] == "DS015" and f["severity"] == "error"]
        assert refusals and "raises" in refusals[0]["message"], doc["findings"]
        return
    assert mismatches(doc, setting) == []
    if setting["training_template"]:
        assert setting["training_template"] in doc["context"]["chat_template"]


PREFERENCE = FIXTURES / "trl-1.16.0-preference"
PREFERENCE_GOLDENS: dict[str, Any] = json.loads((PREFERENCE / "goldens.json").read_text())


def preference_cases() -> list[ParameterSet]:
    return [pytest.param(c, id=f"{c['task']}-{c['setting']}-{c['tokenizer']}-{c['file'][5:-5]}")
            for c in PREFERENCE_GOLDENS["cases"]]


def inspected(case: dict[str, Any]) -> Report:
    config = case["config"]
    task = "kto" if case["task"] == "kto_paired" else case["task"]
    rows = tuple(range(len(json.loads((PREFERENCE / case["file"]).read_text()))))
    return build_report(InspectOptions(
        dataset=str(PREFERENCE / case["file"]), tokenizer=str(TOKENIZERS / case["tokenizer"]), task=task,
        max_length=config.get("max_length"), truncation_mode=config.get("truncation_mode"), rows=rows,
    ))


def preference_mismatches(case: dict[str, Any]) -> list[str]:
    """What differs between the trainer's rows and ours (empty: all match)."""
    report = inspected(case)
    views = {v["row"]: v for v in report.details["rows"]}
    if "error" in case:  # TRL refuses the whole dataset: mldebug must say so on the offending row
        refused = [f for f in report.findings if f.code in ("DP003", "DP013") and "for the whole dataset" in f.message]
        return [] if refused else [f"TRL raised ({case['error'][:80]}) and no DP003 finding says so"]
    if case["task"] == "kto_paired":
        return _unpaired_mismatches(case, views)
    out = []
    dropped = sorted(f.location.row for f in report.findings if f.code == "DP005")
    if dropped != case["dropped"]:
        out.append(f"dropped rows: trl {case['dropped']}, mldebug {dropped}")
    for golden in case["rows"]:
        view = views[golden["row"]]
        for key in ("chosen", "rejected") if case["task"] in ("dpo", "orpo") else (None,):
            want, got = (golden[key], view[key]) if key else (golden, view)
            fields = ("prompt_input_ids",) if case["task"] == "grpo" else ("input_ids", "labels")
            for field in fields:
                if want[field] != got.get(field):
                    out.append(f"row {golden['row']} {key or ''} {field}: trl {want[field]} != mldebug {got.get(field)}")
        if case["task"] == "kto" and golden["label"] != view["label"]:
            out.append(f"row {golden['row']} label differs")
    return out


def _unpaired_mismatches(case: dict[str, Any], views: dict[int, Any]) -> list[str]:
    """KTO on pairs: each unpaired row the trainer kept (by source row and label) against that side of our row."""
    sides = {True: "chosen", False: "rejected"}
    ours = {(row, label) for row, view in views.items() if "error" not in view
            for label, side in sides.items() if not view[side].get("dropped")}
    theirs = {(golden["row"], golden["label"]) for golden in case["rows"]}
    out = [f"kept unpaired rows: trl {sorted(theirs)}, mldebug {sorted(ours)}"] if ours != theirs else []
    for golden in case["rows"]:
        part = views[golden["row"]][sides[golden["label"]]]
        for field in ("input_ids", "labels"):
            if golden[field] != part.get(field):
                out.append(f"row {golden['row']} {sides[golden['label']]} {field}: trl {golden[field]} != "
                           f"mldebug {part.get(field)}")
    return out


def replay_preference(case: dict[str, Any], tmp_path: Path) -> None:
    assert preference_mismatches(case) == []


def step_cases() -> list[ParameterSet]:
    return [pytest.param(c, id=f"{c['prompts']}-{'-'.join(f'{k}={v}' for k, v in c['config'].items())}")
            for c in PREFERENCE_GOLDENS.get("grpo_steps", [])]


def replay_steps(case: dict[str, Any], tmp_path: Path) -> None:
    """lr-plot on a GRPOConfig counts the micro-batches and optimizer steps GRPOTrainer's dataloader gives."""
    config = tmp_path / "grpo.yaml"
    config.write_text("".join(f"{key}: {value}\n" for key, value in case["config"].items()))
    details = schedule_report(str(config), num_rows=case["prompts"]).details
    assert (details["micro_batches_per_epoch"], details["optimizer_steps_per_epoch"],
            details["total_optimizer_steps"]) == (case["micro_batches_per_epoch"], case["optimizer_steps_per_epoch"],
                                                  case["total_optimizer_steps"])


SUITES = (
    GoldenSuite("trl-sft", "trl", "tools/trl_goldens.py",
                "HF_HUB_OFFLINE=1 python tools/trl_goldens.py [--corpus ../shared/corpus]", GOLDENS,
                sft_cases, replay_sft),
    GoldenSuite("trl-preference", "trl", "tools/trl_preference_goldens.py", "python tools/trl_preference_goldens.py",
                PREFERENCE, preference_cases, replay_preference),
    GoldenSuite("trl-grpo-steps", "trl", "tools/trl_preference_goldens.py", "python tools/trl_preference_goldens.py",
                PREFERENCE, step_cases, replay_steps),
    *trl_vision.SUITES,
)
