"""The batch plan equals the rows axolotl 0.19.0's and LLaMA-Factory 0.9.5's own trainers train in each optimizer step
(fixtures/batch-plan/axolotl-0.19.0.jsonl and llamafactory-0.9.5.jsonl, made by tools/axolotl_batch_plan_goldens.py
and tools/llamafactory_batch_plan_goldens.py on hypothesis-generated configs), or axolotl's plan is refused by name
where the real order is not decided by the config."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.frameworks.axolotl.batch_plan import AxolotlSampling, NotReplayed, axolotl_plan
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings
from support import FIXTURES

RECORDED = 40  # the tools record 40 optimizer steps at most


def load(name: str) -> tuple[dict, list[dict]]:
    header, *configs = [json.loads(line) for line in (FIXTURES / "batch-plan" / name).read_text().splitlines()]
    return header, configs


AXOLOTL_HEADER, AXOLOTL = load("axolotl-0.19.0.jsonl")
LF_HEADER, LLAMA_FACTORY = load("llamafactory-0.9.5.jsonl")


def sampling_of(c: dict) -> AxolotlSampling:
    return AxolotlSampling(
        rows=c["rows"], micro_batch_size=c["micro_batch_size"], gradient_accumulation_steps=c["gradient_accumulation_steps"],
        world_size=c["world_size"], seed=c["seed"], num_epochs=c["num_epochs"], max_steps=c["max_steps"],
        dataloader_drop_last=c["dataloader_drop_last"], curriculum_sampling=c["curriculum_sampling"],
        sample_packing=c["sample_packing"], lengths=tuple(c["lengths"]), sequence_len=c["sequence_len"],
        multipack_real_batches=c["multipack_real_batches"], bin_size=c["sample_packing_bin_size"],
        group_size=c["sample_packing_group_size"], sequential_packing=c["sample_packing_sequentially"])


def refused(c: dict) -> bool:
    return c["sample_packing"] and c["world_size"] > 1 and not c["curriculum_sampling"]


def assert_plan_equals(plan: BatchPlan, c: dict, who: str) -> None:
    want = c["steps"]
    if not want:  # no rank has a micro-batch (fewer packed bins than ranks): the batch plan refuses such a run
        assert plan.micro_batches_per_epoch == 0 and next(plan.steps(), None) is None
        return
    got = []
    for step in plan.steps():
        if len(got) == len(want):
            break
        got.append([[list(batch) for batch in rank] for rank in step.micro_batches])
    settings = {k: v for k, v in c.items() if k not in ("steps", "lengths")}
    for number, (mine, theirs) in enumerate(zip(got, want), start=1):
        assert mine == theirs, f"{settings}: step {number} differs: {mine} vs {who}'s {theirs}"
        again = plan.step(number)
        assert again is not None and [[list(b) for b in r] for r in again.micro_batches] == theirs
    assert len(got) == len(want), f"{settings}: {len(got)} steps vs {who}'s {len(want)}"
    if len(want) < RECORDED:  # the trainer ran to its end
        assert plan.total_steps == len(want), f"{settings}: total {plan.total_steps} vs {len(want)}"
        assert plan.step(len(want) + 1) is None


def replay_axolotl(c: dict) -> None:
    sampling = sampling_of(c)
    if refused(c):
        with pytest.raises(NotReplayed, match="global torch RNG"):
            axolotl_plan(sampling)
        return
    # the sampler's length and the run's length where axolotl drew them from the global RNG (packing without
    # max_steps): given from the run, as check-run can read them from the log's steps
    epoch_batches = c["epoch_batches"] if c["sample_packing"] else None
    plan = axolotl_plan(sampling, epoch_batches, c["max_steps_passed"] if c["sample_packing"] else None)
    assert_plan_equals(plan, c, "AxolotlTrainer")
    if not c["sample_packing"]:  # mldebug's own run length is axolotl's (calculate_total_num_steps)
        assert axolotl_plan(sampling).total_steps == plan.total_steps


def plan_of_llamafactory(c: dict) -> BatchPlan:
    return BatchPlan(SamplerSettings(
        samples=c["rows"], micro_batch_size=c["micro_batch_size"], gradient_accumulation_steps=c["gradient_accumulation_steps"],
        world_size=c["world_size"], seed=c["seed"], data_seed=c["data_seed"], shuffle=not c["disable_shuffling"],
        drop_last=c["drop_last"], epochs=c["epochs"], max_steps=c["max_steps"]))


def case_id(c: dict) -> str:
    return f"n{c['rows']}-b{c['micro_batch_size']}-w{c['world_size']}" + ("-packed" if c.get("sample_packing") else "")


def test_goldens_cover_the_generated_space():
    assert AXOLOTL_HEADER["versions"]["axolotl"] == "0.19.0" and len(AXOLOTL) >= 200
    assert LF_HEADER["versions"]["llamafactory"] == "0.9.5" and len(LLAMA_FACTORY) >= 200
    replayed = [c for c in AXOLOTL if not refused(c)]
    assert len(replayed) >= 150 and sum(c["sample_packing"] for c in replayed) >= 50
    assert {c["world_size"] for c in replayed} >= {1, 2, 4} and any(c["curriculum_sampling"] for c in replayed)
    assert any(c["multipack_real_batches"] for c in replayed) and any(c["sample_packing_sequentially"] for c in replayed)
    assert {c["world_size"] for c in LLAMA_FACTORY} >= {1, 2, 4, 8} and any(c["disable_shuffling"] for c in LLAMA_FACTORY)
    assert {c["stage"] for c in LLAMA_FACTORY} == {"sft", "pt"} and any(c["max_steps"] > 0 for c in LLAMA_FACTORY)


@pytest.mark.replay
@pytest.mark.parametrize("config", AXOLOTL, ids=case_id)
def test_plan_equals_axolotl(config):
    replay_axolotl(config)


@pytest.mark.replay
@pytest.mark.parametrize("config", LLAMA_FACTORY, ids=case_id)
def test_plan_equals_llamafactory(config):
    assert_plan_equals(plan_of_llamafactory(config), config, "LLaMA-Factory")


def test_packed_axolotl_run_without_the_logged_length_names_the_same_first_steps():
    """Without the run's own sampler length, mldebug packs its seeded order: the steps it names are axolotl's as long
    as the run has them (the length comes from a random draw)."""
    packed = [c for c in AXOLOTL if c["sample_packing"] and not refused(c) and c["world_size"] == 1]
    assert packed
    for c in packed:
        plan = axolotl_plan(sampling_of(c))
        per_epoch = min(plan.micro_batches_per_epoch, c["epoch_batches"]) // c["gradient_accumulation_steps"]
        for number, theirs in enumerate(c["steps"][:per_epoch], start=1):
            step = plan.step(number)
            assert step is not None and [[list(b) for b in r] for r in step.micro_batches] == theirs, case_id(c)


def test_packing_needs_the_rows_lengths():
    with pytest.raises(NotReplayed, match="lengths"):
        axolotl_plan(AxolotlSampling(rows=4, sample_packing=True))
