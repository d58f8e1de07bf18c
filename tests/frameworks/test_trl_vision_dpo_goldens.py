"""TRL's vision DPO path: mldebug's two sides of an image preference row equal TRL 1.16's own collator's, case for case.

The goldens were written by tools/vl_dpo_goldens.py, which runs TRL's DataCollatorForVisionPreference with the real
Qwen2VLProcessor on hypothesis-generated rows (fixtures/trl-1.16.0-vision/dpo-goldens-*.json.gz): per side the ids
the collator keeps and its completion mask (mldebug's trained labels), and the image tokens the processor's grid
implies. Where TRL raises, mldebug must refuse the row with the check that names the same failure; where the cut
leaves fewer image tokens than the grid implies (the model's forward raises), mldebug must report DS033. A fast sample
runs by default; every case under ``-m slow``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vision_replay import TRL_REFUSALS, Suite, ids_differ, image_bytes, processor, refusal_code

from mldebug_cli.frameworks.trl.vision import VisionRow
from mldebug_cli.frameworks.trl.vision_preference import encode_pair
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    images = [{"bytes": image_bytes(s)} for s in case["images"]]
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
        want = SUITE.wanted(case["error"])
        if got != want:
            return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got is not None:
        return f"TRL collates the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    assert row.rejected is not None
    for side, mine in (("chosen", row), ("rejected", row.rejected)):
        want = case[side]
        differ = ids_differ(mine.input_ids, want["input_ids"], "TRL")
        if differ:
            return f"{side}: {differ}"
        trained = [int(label != IGNORE_INDEX) for label in mine.labels]
        if trained != want["completion_mask"]:
            return f"{side}: trained tokens differ from TRL's completion_mask"
        kept = sum(1 for t in mine.input_ids if t == processor(folder).image_token_id)
        forward_fails = kept != case["image_tokens"]
        if forward_fails != bool(mine.cut_images) and refusal_code(mine) != "DS031":
            return f"{side}: {kept} of {case['image_tokens']} image tokens kept, mldebug cut images {mine.cut_images}"
    return None


SUITE = Suite(
    FIXTURES / "trl-1.16.0-vision", "dpo-goldens-*.json.gz",
    fast=12,  # the processor's load is shared with test_trl_vision_goldens (cached)
    refusals={
        **TRL_REFUSALS,
        "Invalid role in message": "DS011",
        "Invalid role in the last message": "DS011",
        "KeyError: 'prompt'": "DS010",
    },
    disagreement=disagreement,
)


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        assert doc["collator"] == "trl.trainer.dpo_trainer.DataCollatorForVisionPreference"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert 0 < refused < len(doc["cases"]) * 2 // 3  # both outcomes are exercised, collated rows by the thousand


# every refusal is named; a sample of cases agrees with TRL (fast tier); every case does (-m slow)
test_every_refusal_in_the_goldens_is_named, test_a_sample_of_cases_matches_trl, test_every_case_matches_trl = \
    SUITE.tests()
