"""TRL's vision KTO goldens (tools/vl_kto_goldens.py; replayed case for case by tests/goldens/, suite trl-vision-kto)
record the versions and the collator that made them and exercise both outcomes and every label shape."""

from __future__ import annotations

from goldens.trl_vision import KTO as SUITE


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        assert doc["collator"] == "trl.trainer.kto_trainer.DataCollatorForVisionUnpairedPreference"
        cases = doc["cases"]
        refused = sum(1 for c in cases if "error" in c)
        assert len(cases) >= 3000 and 0 < refused < len(cases) * 2 // 3  # both outcomes, collated rows by the thousand
        assert {type(c["label"]) for c in cases if "error" not in c} == {bool, int}  # true/false and 1/0 alike
        assert any("'label'" in c.get("error", "") for c in cases)  # a missing label is TRL's KeyError
