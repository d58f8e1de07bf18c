"""inspect-data on preference rows gives, row for row, the ids and labels TRL 1.16's own trainers prepared.

The goldens were written by tools/trl_preference_goldens.py running DPOTrainer, KTOTrainer and GRPOTrainer
(trl 1.16.0) on our rows (fixtures/trl-1.16.0-preference/rows_*.json) with four npm tokenizers.
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
    report = build_report(InspectOptions(
        dataset=str(GOLDENS_DIR / case["file"]), tokenizer=str(TOKENIZERS / case["tokenizer"]), task=case["task"],
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
        refused = [f for f in report.findings if f.code == "DP003" and "raises for the whole dataset" in f.message]
        return [] if refused else [f"TRL raised ({case['error'][:80]}) and no DP003 finding says so"]
    out = []
    dropped = sorted(f.location.row for f in report.findings if f.code == "DP005")
    if dropped != case["dropped"]:
        out.append(f"dropped rows: trl {case['dropped']}, mldebug {dropped}")
    for golden in case["rows"]:
        view = views[golden["row"]]
        for key in ("chosen", "rejected") if case["task"] == "dpo" else (None,):
            want, got = (golden[key], view[key]) if key else (golden, view)
            fields = ("prompt_input_ids",) if case["task"] == "grpo" else ("input_ids", "labels")
            for field in fields:
                if want[field] != got.get(field):
                    out.append(f"row {golden['row']} {key or ''} {field}: trl {want[field]} != mldebug {got.get(field)}")
        if case["task"] == "kto" and golden["label"] != view["label"]:
            out.append(f"row {golden['row']} label differs")
    return out


def test_the_goldens_record_the_versions_that_made_them():
    assert GOLDENS["versions"]["trl"] == "1.16.0"
    assert {c["tokenizer"] for c in CASES} >= {"qwen2.5-instruct", "qwen3", "mistral-nemo-instruct"}
    assert {c["setting"] for c in CASES} >= {"default", "truncating"}


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
