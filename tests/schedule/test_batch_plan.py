"""The batch plan equals the rows the real transformers Trainer trains in each optimizer step
(fixtures/batch-plan/hf-trainer.jsonl, made by tools/batch_plan_goldens.py on hypothesis-generated configs)."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings, shard_batches
from support import FIXTURES

GOLDENS = FIXTURES / "batch-plan" / "hf-trainer.jsonl"
HEADER, *CONFIGS = [json.loads(line) for line in GOLDENS.read_text().splitlines()]
SAMPLE = CONFIGS[::12]  # the default run; the whole set under -m slow


def plan_of(config: dict) -> BatchPlan:
    return BatchPlan(SamplerSettings(
        samples=config["rows"], micro_batch_size=config["micro_batch_size"],
        gradient_accumulation_steps=config["gradient_accumulation_steps"], world_size=config["world_size"],
        seed=config["seed"], data_seed=config["data_seed"], shuffle=config["shuffle"], drop_last=config["drop_last"],
        epochs=config["epochs"], max_steps=config["max_steps"]))


def replay(config: dict) -> None:
    want = config["steps"]
    plan = plan_of(config)
    got = []
    for step in plan.steps():
        if len(got) == len(want):
            break
        got.append([[list(batch) for batch in rank] for rank in step.micro_batches])
    settings = {k: v for k, v in config.items() if k != "steps"}
    for number, (mine, theirs) in enumerate(zip(got, want), start=1):
        assert mine == theirs, f"{settings}: step {number} differs: {mine} vs the Trainer's {theirs}"
        assert plan.step(number) is not None and [[list(b) for b in r] for r in plan.step(number).micro_batches] == theirs
    assert len(got) == len(want), f"{settings}: {len(got)} steps vs the Trainer's {len(want)}"
    if len(want) < 48:  # the Trainer ran to its end (48 steps are recorded at most)
        assert plan.total_steps == len(want), f"{settings}: total {plan.total_steps} vs {len(want)}"
        assert plan.step(len(want) + 1) is None


def test_goldens_cover_the_generated_space():
    assert HEADER["versions"]["transformers"] and len(CONFIGS) >= 200
    assert {c["world_size"] for c in CONFIGS} >= {1, 2, 4}
    assert any(c["drop_last"] for c in CONFIGS) and any(not c["shuffle"] for c in CONFIGS)
    assert any(c["data_seed"] is not None for c in CONFIGS) and any(c["max_steps"] > 0 for c in CONFIGS)


@pytest.mark.parametrize("config", SAMPLE, ids=lambda c: f"n{c['rows']}-b{c['micro_batch_size']}-w{c['world_size']}")
def test_plan_equals_the_trainer_sample(config):
    replay(config)


@pytest.mark.slow
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"n{c['rows']}-b{c['micro_batch_size']}-w{c['world_size']}")
def test_plan_equals_the_trainer_all(config):
    replay(config)


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
