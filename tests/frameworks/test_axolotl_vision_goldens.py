"""axolotl's multimodal goldens (tools/axolotl_vl_goldens.py; replayed case for case by tests/goldens/, suite
axolotl-vision) record the versions that made them and exercise both outcomes."""

from __future__ import annotations

from goldens.axolotl_vision import SUITE


def test_goldens_record_the_versions_and_both_outcomes() -> None:
    assert {"goldens-qwen2-vl.json.gz", "goldens-gemma-3.json.gz", "goldens-llava-1.5.json.gz"} <= set(SUITE.files)
    refused = 0
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["axolotl"] == "0.19.0" and doc["versions"]["transformers"] == "5.16.1"
        errors = sum(1 for c in doc["cases"] if "error" in c)
        assert errors < len(doc["cases"])  # axolotl trains rows of every processor
        refused += errors
    assert refused > 0
    assert len(SUITE.goldens("goldens-qwen2-vl.json.gz")["cases"]) >= 3000
