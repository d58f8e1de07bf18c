"""TRL's vision DPO goldens (tools/vl_dpo_goldens.py; replayed case for case by tests/goldens/, suite trl-vision-dpo)
record the versions and the collator that made them and exercise both outcomes."""

from __future__ import annotations

from goldens.trl_vision import DPO as SUITE


def test_goldens_record_the_versions_and_enough_cases() -> None:
    assert SUITE.files
    for name in SUITE.files:
        doc = SUITE.goldens(name)
        assert doc["versions"]["trl"] == "1.16.0"
        assert doc["collator"] == "trl.trainer.dpo_trainer.DataCollatorForVisionPreference"
        refused = sum(1 for c in doc["cases"] if "error" in c)
        assert 0 < refused < len(doc["cases"]) * 2 // 3  # both outcomes are exercised, collated rows by the thousand
