"""axolotl 0.19.0 refuses image rows for DPO and KTO (tools/axolotl_vl_preference_refusal.py ran its own dataset
transforms and the TRL 1.9.0 trainers it pins on one image row each): mldebug's refusal says what they raised."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.frameworks.axolotl.framework import FRAMEWORK
from support import FIXTURES

RECORD = json.loads((FIXTURES / "axolotl-0.19.0-vision" / "preference-refusal.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("task", ["dpo", "kto"])
def test_the_refusal_quotes_what_axolotls_trainer_raised(task: str) -> None:
    assert RECORD["versions"]["axolotl"] == "0.19.0" and RECORD["versions"]["trl"] == "1.9.0"
    found = RECORD["tasks"][task]
    assert "images" in found["columns"]  # axolotl's transform keeps the image column
    kind, _, said = found["error"].partition(": ")
    assert FRAMEWORK.vision is not None and task not in FRAMEWORK.vision.tasks
    refusal = FRAMEWORK.vision.refused[task]
    assert f"raise {kind} ({said.split('. ')[0]})" in refusal
