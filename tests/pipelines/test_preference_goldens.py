"""The goldens of TRL 1.16's preference trainers (tools/trl_preference_goldens.py running DPOTrainer, KTOTrainer (on
unpaired rows and on chosen/rejected pairs it unpairs itself), GRPOTrainer and the experimental ORPOTrainer on our rows
(fixtures/trl-1.16.0-preference/rows_*.json) with four npm tokenizers; and GRPOTrainer's step counts) record what made
them. tests/goldens/ replays them row for row (suites trl-preference and trl-grpo-steps).
"""

from __future__ import annotations

from collections import Counter

from goldens.trl import PREFERENCE_GOLDENS as GOLDENS
from goldens.trl import preference_mismatches as mismatches

CASES = GOLDENS["cases"]
STEP_CASES = GOLDENS.get("grpo_steps", [])


def test_the_goldens_record_the_versions_that_made_them():
    assert GOLDENS["versions"]["trl"] == "1.16.0"
    assert {c["tokenizer"] for c in CASES} >= {"qwen2.5-instruct", "qwen3", "mistral-nemo-instruct"}
    assert {c["setting"] for c in CASES} >= {"default", "truncating"}
    assert {c["task"] for c in CASES} >= {"dpo", "kto", "kto_paired", "orpo", "grpo"}


def test_grpo_step_cases_were_recorded():
    assert len(STEP_CASES) >= 5


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
