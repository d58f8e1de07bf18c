"""TRL's vision SFT goldens (tools/vl_goldens.py; replayed case for case by tests/goldens/, suite trl-vision-sft)
record the versions that made them and exercise both outcomes."""

from __future__ import annotations

from goldens.trl_vision import SFT as SUITE


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert refused > 0 and len(doc["cases"]) - refused >= len(doc["cases"]) // 3  # both outcomes exercised
    for name in ("goldens-qwen2-vl.json.gz", "goldens-gemma-3.json.gz", "goldens-idefics3.json.gz"):
        assert len(SUITE.goldens(name)["cases"]) >= 3000
