"""inspect-data on preference rows gives, row for row, the ids and labels TRL 1.16's own trainers prepared.

The goldens were written by tools/trl_preference_goldens.py running DPOTrainer, KTOTrainer (on unpaired rows and on
chosen/rejected pairs it unpairs itself), GRPOTrainer and the experimental ORPOTrainer (trl 1.16.0) on our rows
(fixtures/trl-1.16.0-preference/rows_*.json) with four npm tokenizers; and GRPOTrainer's step counts.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import FIXTURES, TOKENIZERS

GOLDENS_DIR = FIXTURES / "trl-1.16.0-preference"
GOLDENS = json.loads((GOLDENS_DIR / "goldens.json").read_text())
CASES = GOLDENS["cases"]


def inspected(case: dict) -> dict:
    config = case["config"]
    task = "kto" if case["task"] == "kto_paired" else case["task"]
    report = build_report(InspectOptions(
        dataset=str(GOLDENS_DIR / case["file"]), tokenizer=str(TOKENIZERS / case["tokenizer"]), task=task,
        max_length=config.get("max_length"), truncation_mode=config.get("truncation_mode"), rows=_all_rows(case),
    ))
    return report


def _all_rows(case: dict) -> tuple[int, ...]:
    return tuple(range(len(json.loads((GOLDENS_DIR / case["file"]).read_text()))))


def mismatches(case: dict) -> list[str]:
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


def _unpaired_mismatches(case: dict, views: dict) -> list[str]:
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


def test_the_goldens_record_the_versions_that_made_them():
    assert GOLDENS["versions"]["trl"] == "1.16.0"
    assert {c["tokenizer"] for c in CASES} >= {"qwen2.5-instruct", "qwen3", "mistral-nemo-instruct"}
    assert {c["setting"] for c in CASES} >= {"default", "truncating"}
    assert {c["task"] for c in CASES} >= {"dpo", "kto", "kto_paired", "orpo", "grpo"}


@pytest.mark.replay
@pytest.mark.parametrize("case", CASES, ids=[f"{c['task']}-{c['setting']}-{c['tokenizer']}-{c['file'][5:-5]}" for c in CASES])
def test_rows_match_trl(case):
    assert mismatches(case) == []


def table() -> str:
    """setting x tokenizer: rows matched / rows compared (run as a script for the report)."""
    counts: Counter = Counter()
    for case in CASES:
        key = (f"{case['task']} {case['setting']}", case["tokenizer"])
        compared = len(case.get("rows", [])) + len(case["dropped"]) or 1
        counts[key, "total"] += compared
        counts[key, "matched"] += compared if not mismatches(case) else 0
    settings = sorted({k[0][0] for k in counts})
    tokenizers = sorted({k[0][1] for k in counts})
    lines = ["| setting | " + " | ".join(tokenizers) + " |", "|---" * (len(tokenizers) + 1) + "|"]
    for s in settings:
        cells = [f"{counts[(s, t), 'matched']}/{counts[(s, t), 'total']}" for t in tokenizers]
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())


STEP_CASES = GOLDENS.get("grpo_steps", [])


@pytest.mark.replay
@pytest.mark.parametrize("case", STEP_CASES, ids=[f"{c['prompts']}-{'-'.join(f'{k}={v}' for k, v in c['config'].items())}"
                                                  for c in STEP_CASES])
def test_grpo_step_counts_match_the_real_trainer(case, tmp_path):
    """lr-plot on a GRPOConfig counts the micro-batches and optimizer steps GRPOTrainer's dataloader gives."""
    from mldebug_cli.pipelines.schedule import build_report as schedule_report

    config = tmp_path / "grpo.yaml"
    config.write_text("".join(f"{key}: {value}\n" for key, value in case["config"].items()))
    details = schedule_report(str(config), num_rows=case["prompts"]).details
    assert (details["micro_batches_per_epoch"], details["optimizer_steps_per_epoch"],
            details["total_optimizer_steps"]) == (case["micro_batches_per_epoch"], case["optimizer_steps_per_epoch"],
                                                  case["total_optimizer_steps"])


def test_grpo_step_cases_were_recorded():
    assert len(STEP_CASES) >= 5
