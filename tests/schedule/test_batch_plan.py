"""The batch plan equals the rows the real transformers Trainer trains in each optimizer step
(fixtures/batch-plan/hf-trainer.jsonl, made by tools/batch_plan_goldens.py on hypothesis-generated configs)."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings, shard_batches
from support import FIXTURES

GOLDENS = FIXTURES / "batch-plan" / "hf-trainer.jsonl"
HEADER, *CONFIGS = [json.loads(line) for line in GOLDENS.read_text().splitlines()]


def test_goldens_cover_the_generated_space():
    assert HEADER["versions"]["transformers"] and len(CONFIGS) >= 200
    assert {c["world_size"] for c in CONFIGS} >= {1, 2, 4}
    assert any(c["drop_last"] for c in CONFIGS) and any(not c["shuffle"] for c in CONFIGS)
    assert any(c["data_seed"] is not None for c in CONFIGS) and any(c["max_steps"] > 0 for c in CONFIGS)


def test_packed_units_name_the_original_rows():
    plan = BatchPlan(SamplerSettings(samples=3, micro_batch_size=2, shuffle=False), units=[(0, 1), (2,), (3, 4, 5)])
    assert [s.rows for s in plan.steps()] == [(0, 1, 2), (3, 4, 5)]
    assert plan.steps_of_rows({4, 2}) == {2: 1, 4: 2}


def test_even_batches_tops_up_from_the_first_rows():  # as accelerate.data_loader.BatchSamplerShard deals 5 rows
    batches = [[0, 1], [2, 3], [4]]
    assert shard_batches(batches, 2, 1, 2, drop_last=False, even_batches=True) == [[2, 3], [1, 2]]
    assert shard_batches(batches, 2, 0, 2, drop_last=False, even_batches=True) == [[0, 1], [4, 0]]
    assert shard_batches(batches, 2, 0, 2, drop_last=False, even_batches=False) == [[0, 1], [4]]
    assert shard_batches(batches, 2, 1, 2, drop_last=False, even_batches=False) == [[2, 3]]


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        BatchPlan(SamplerSettings(samples=4, micro_batch_size=0))
