"""axolotl's multimodal goldens (tools/axolotl_vl_goldens.py; replayed case for case by tests/goldens/, suite
axolotl-vision) record the versions that made them and exercise both outcomes."""

from __future__ import annotations

from goldens.axolotl_vision import SUITE


def test_goldens_record_the_versions_and_both_outcomes() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["axolotl"] == "0.19.0" and doc["versions"]["transformers"] == "5.16.1"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert 0 < refused < len(doc["cases"])
