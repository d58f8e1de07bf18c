"""The batch plan's axolotl and LLaMA-Factory goldens (tests/goldens/batch_plans.py replays them case by case) cover
what they claim to, and axolotl's plan without the run's own lengths names the same first steps."""

from __future__ import annotations

import pytest
from goldens.batch_plans import (
    AXOLOTL_GOLDENS,
    LLAMA_FACTORY_GOLDENS,
    case_id,
    load,
    refused,
    sampling_of,
)

from mldebug_cli.frameworks.axolotl.batch_plan import AxolotlSampling, NotReplayed, axolotl_plan

AXOLOTL_HEADER, AXOLOTL = load(AXOLOTL_GOLDENS)
LF_HEADER, LLAMA_FACTORY = load(LLAMA_FACTORY_GOLDENS)


def test_goldens_cover_the_generated_space():
    assert AXOLOTL_HEADER["versions"]["axolotl"] == "0.19.0" and len(AXOLOTL) >= 200
    assert LF_HEADER["versions"]["llamafactory"] == "0.9.5" and len(LLAMA_FACTORY) >= 200
    replayed = [c for c in AXOLOTL if not refused(c)]
    assert len(replayed) >= 150 and sum(c["sample_packing"] for c in replayed) >= 50
    assert {c["world_size"] for c in replayed} >= {1, 2, 4} and any(c["curriculum_sampling"] for c in replayed)
    assert any(c["multipack_real_batches"] for c in replayed) and any(c["sample_packing_sequentially"] for c in replayed)
    assert {c["world_size"] for c in LLAMA_FACTORY} >= {1, 2, 4, 8} and any(c["disable_shuffling"] for c in LLAMA_FACTORY)
    assert {c["stage"] for c in LLAMA_FACTORY} == {"sft", "pt"} and any(c["max_steps"] > 0 for c in LLAMA_FACTORY)


def test_packed_axolotl_run_without_the_logged_length_names_the_same_first_steps():
    """Without the run's own sampler length, mldebug packs its seeded order: the steps it names are axolotl's as long
    as the run has them (axolotl draws the length from the global RNG)."""
    packed = [c for c in AXOLOTL if c["sample_packing"] and not refused(c) and c["world_size"] == 1]
    assert len(packed) >= 50
    for c in packed:
        plan = axolotl_plan(sampling_of(c))
        per_epoch = min(plan.micro_batches_per_epoch, c["epoch_batches"]) // c["gradient_accumulation_steps"]
        for number, theirs in enumerate(c["steps"][:per_epoch], start=1):
            step = plan.step(number)
            assert step is not None and [[list(b) for b in r] for r in step.micro_batches] == theirs, case_id(c)


def test_packing_needs_the_rows_lengths():
    with pytest.raises(NotReplayed, match="lengths"):
        axolotl_plan(AxolotlSampling(rows=4, sample_packing=True))
