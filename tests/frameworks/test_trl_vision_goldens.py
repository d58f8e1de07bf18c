"""TRL's vision SFT path: mldebug's ids and labels for image rows equal TRL 1.16's own collator's, case for case.

The goldens were written by tools/vl_goldens.py, which runs TRL's DataCollatorForVisionLanguageModeling with the real
processor (Qwen2VLProcessor; Qwen2_5_VLProcessor with max_pixels 200,704) on hypothesis-generated rows (fixtures/trl-1.16.0-vision/). Where TRL raises, mldebug must refuse the
row with the check that names the same failure. A fast sample runs by default; every case under ``-m slow``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vision_replay import TRL_REFUSALS, Suite, ids_differ, image_bytes, processor, refusal_code

from mldebug_cli.frameworks.trl.vision import VisionRow, encode_row
from mldebug_cli.sources.images import ImageReader
from support import FIXTURES


def mldebug_row(case: dict[str, Any], folder: str) -> VisionRow:
    raw = {"images": [{"bytes": image_bytes(s)} for s in case["images"]], "messages": case["messages"]}
    return encode_row(0, None, raw, processor(folder), ImageReader(Path(".")), case["max_length"])


def disagreement(case: dict[str, Any], folder: str) -> str | None:
    row = mldebug_row(case, folder)
    got = refusal_code(row)
    if "error" in case:
        want = SUITE.wanted(case["error"])
        if got != want:
            return f"TRL raises {case['error']!r} (expected {want}); mldebug: {got or 'trains the row'}"
        return None
    if got is not None:
        return f"TRL trains the row; mldebug refuses it ({got}: {row.refused.message if row.refused else ''})"
    labels = case["input_ids"] if case["labels"] == "input_ids" else case["labels"]
    differ = ids_differ(row.input_ids, case["input_ids"], "TRL")
    if differ:
        return differ
    if row.labels != labels:
        return "labels differ"
    return None


SUITE = Suite(
    FIXTURES / "trl-1.16.0-vision", "goldens-*.json.gz",  # one per processor folder under fixtures/processors
    fast=60,
    refusals={**TRL_REFUSALS, "Invalid role": "DS011", "Mismatch in `image` token count": "DS033"},
    disagreement=disagreement,
)


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert 0 < refused < len(doc["cases"]) // 2  # both outcomes are exercised
    assert len(SUITE.goldens("goldens-qwen2-vl.json.gz")["cases"]) >= 3000


# every refusal is named; a sample of cases agrees with TRL (fast tier); every case does (-m slow)
test_every_refusal_in_the_goldens_is_named, test_a_sample_of_cases_matches_trl, test_every_case_matches_trl = \
    SUITE.tests()
