"""TRL's vision DPO path: mldebug's two sides of an image preference row equal TRL 1.16's own collator's, case for case.

The goldens were written by tools/vl_dpo_goldens.py, which runs TRL's DataCollatorForVisionPreference with the real
Qwen2VLProcessor on hypothesis-generated rows (fixtures/trl-1.16.0-vision/dpo-goldens-*.json.gz): per side the ids
the collator keeps and its completion mask (mldebug's trained labels), and the image tokens the processor's grid
implies. Where TRL raises, mldebug must refuse the row with the check that names the same failure; where the cut
leaves fewer image tokens than the grid implies (the model's forward raises), mldebug must report DS033. A fast sample
runs by default; every case under ``-m slow``.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from test_trl_vision_goldens import image_bytes, processor, refusal_code

from mldebug_cli.frameworks.trl.vision import VisionRow
from mldebug_cli.frameworks.trl.vision_preference import encode_pair
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES

GOLDENS = FIXTURES / "trl-1.16.0-vision"
FILES = sorted(p.name for p in GOLDENS.glob("dpo-goldens-*.json.gz"))
FAST = 12  # the processor's load is shared with test_trl_vision_goldens (cached)
# what TRL raises -> the check mldebug reports it with
REFUSALS = {
    "does not match number of image placeholders": "DS031",
    "tokens in the prompts should be the same as the number of images": "DS031",
    "tokens in the text but no images were passed": "DS031",
    "Invalid role in message": "DS011",
    "Invalid role in the last message": "DS011",
    "KeyError: 'prompt'": "DS010",
    "aspect ratio must be smaller than 200": "DS032",
}


@cache
def goldens(name: str) -> dict[str, Any]:
    with gzip.open(GOLDENS / name, "rt", encoding="utf-8") as file:
        return json.load(file)


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    images = [image_bytes(s) for s in case["images"]]
    raw = dict(case["row"])
    if case["column"] == "image":
        raw["image"] = images[0]
    else:
        raw["images"] = images
    return encode_pair(0, None, raw, processor(folder), ImageReader(Path(".")), case["max_length"])


def disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = mldebug_row(case, folder)
    got = row.refused.code if row.refused is not None else "DS032" if row.image_problems else None
    if "error" in case:
        want = next((code for words, code in REFUSALS.items() if words in case["error"]), "unnamed")
        if got != want:
            return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got is not None:
        return f"TRL collates the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    assert row.rejected is not None
    for side, mine in (("chosen", row), ("rejected", row.rejected)):
        want = case[side]
        if mine.input_ids != want["input_ids"]:
            first = next((i for i, (a, b) in enumerate(zip(mine.input_ids, want["input_ids"])) if a != b),
                         min(len(mine.input_ids), len(want["input_ids"])))
            return f"{side}: input_ids differ at {first} (mldebug {len(mine.input_ids)}, TRL {len(want['input_ids'])})"
        trained = [int(label != IGNORE_INDEX) for label in mine.labels]
        if trained != want["completion_mask"]:
            return f"{side}: trained tokens differ from TRL's completion_mask"
        kept = sum(1 for t in mine.input_ids if t == processor(folder).image_token_id)
        forward_fails = kept != case["image_tokens"]
        if forward_fails != bool(mine.cut_images) and refusal_code(mine) != "DS031":
            return f"{side}: {kept} of {case['image_tokens']} image tokens kept, mldebug cut images {mine.cut_images}"
    return None


def _indices(name: str, slow: bool) -> list[int]:
    total = len(goldens(name)["cases"])
    if slow:
        return list(range(total))
    step = max(1, total // FAST)
    return list(range(0, total, step))[:FAST]


def _problems(name: str, slow: bool) -> list[str]:
    doc = goldens(name)
    return [f"{name} case {i}: {d}" for i in _indices(name, slow) if (d := disagreement(doc["cases"][i], doc["processor"]))]


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert FILES
    for name in FILES:
        doc = goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        assert doc["collator"] == "trl.trainer.dpo_trainer.DataCollatorForVisionPreference"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert 0 < refused < len(doc["cases"]) * 2 // 3  # both outcomes are exercised, collated rows by the thousand


@pytest.mark.parametrize("name", FILES)
def test_every_refusal_in_the_goldens_is_named(name: str) -> None:
    cases = goldens(name)["cases"]
    unnamed = {c["error"] for c in cases if "error" in c and not any(w in c["error"] for w in REFUSALS)}
    assert not unnamed


@pytest.mark.parametrize("name", FILES)
def test_a_sample_of_cases_matches_trl(name: str) -> None:
    problems = _problems(name, slow=False)
    assert not problems, "\n".join(problems[:10])


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_every_case_matches_trl(name: str) -> None:
    problems = _problems(name, slow=True)
    assert not problems, f"{len(problems)} disagreements:\n" + "\n".join(problems[:20])
