"""The batch plan's goldens from axolotl 0.19.0's and LLaMA-Factory 0.9.5's own trainers
(fixtures/batch-plan/axolotl-0.19.0.jsonl, llamafactory-0.9.5.jsonl, made by tools/axolotl_batch_plan_goldens.py and
tools/llamafactory_batch_plan_goldens.py on hypothesis-generated configs): the plan names the rows of every recorded
optimizer step, or axolotl's plan is refused by name where the real order is not decided by the config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet

from mldebug_cli.frameworks.axolotl.batch_plan import AxolotlSampling, NotReplayed, axolotl_plan
from mldebug_cli.frameworks.axolotl.prepare import EncodedRow, NotPrepared, Preparation, prepared_rows
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings
from support import FIXTURES

RECORDED = 40  # the tools record 40 optimizer steps at most
AXOLOTL_GOLDENS = FIXTURES / "batch-plan" / "axolotl-0.19.0.jsonl"
LLAMA_FACTORY_GOLDENS = FIXTURES / "batch-plan" / "llamafactory-0.9.5.jsonl"
AXOLOTL_TOOL = "tools/axolotl_batch_plan_goldens.py"
AXOLOTL_COMMAND = ("nice -n 15 /work/venvs/axolotl-sampler/bin/python tools/axolotl_batch_plan_goldens.py "
                   "--configs 240 --more 90 --more-seed 35")
LLAMA_FACTORY_TOOL = "tools/llamafactory_batch_plan_goldens.py"
LLAMA_FACTORY_COMMAND = "nice -n 15 /work/venvs/lf-vision/bin/python tools/llamafactory_batch_plan_goldens.py --configs 240"


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    header, *configs = [json.loads(line) for line in path.read_text().splitlines()]
    return header, configs


def case_id(c: dict[str, Any]) -> str:
    return f"n{c['rows']}-b{c['micro_batch_size']}-w{c['world_size']}" + ("-packed" if c.get("sample_packing") else "")


def cases(path: Path) -> list[ParameterSet]:
    return [pytest.param(c, id=f"{number}:{case_id(c)}") for number, c in enumerate(load(path)[1])]


def sampling_of(c: dict[str, Any]) -> AxolotlSampling:
    return AxolotlSampling(
        rows=c["rows"], micro_batch_size=c["micro_batch_size"], gradient_accumulation_steps=c["gradient_accumulation_steps"],
        world_size=c["world_size"], seed=c["seed"], num_epochs=c["num_epochs"], max_steps=c["max_steps"],
        dataloader_drop_last=c["dataloader_drop_last"], curriculum_sampling=c["curriculum_sampling"],
        sample_packing=c["sample_packing"], lengths=tuple(c["lengths"]), sequence_len=c["sequence_len"],
        multipack_real_batches=c["multipack_real_batches"], bin_size=c["sample_packing_bin_size"],
        group_size=c["sample_packing_group_size"], sequential_packing=c["sample_packing_sequentially"])


def refused(c: dict[str, Any]) -> bool:
    """Packing a shuffled order on several processes: axolotl's order there comes from the global torch RNG."""
    return c["sample_packing"] and c["world_size"] > 1 and not c["curriculum_sampling"]


def assert_plan_equals(plan: BatchPlan, c: dict[str, Any], who: str) -> None:
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


def replay_axolotl(c: dict[str, Any], tmp_path: Path) -> None:
    sampling = sampling_of(c)
    if refused(c):
        with pytest.raises(NotReplayed, match="global torch RNG"):
            axolotl_plan(sampling)
        return
    # with packing, the sampler's length and the run's length are what axolotl drew from the global RNG: given from
    # the run (check-run can read them from the log's steps); without, mldebug's own run length is axolotl's
    epoch_batches = c["epoch_batches"] if c["sample_packing"] else None
    plan = axolotl_plan(sampling, epoch_batches, c["max_steps_passed"] if c["sample_packing"] else None)
    assert_plan_equals(plan, c, "AxolotlTrainer")
    if not c["sample_packing"]:
        assert axolotl_plan(sampling).total_steps == plan.total_steps


def replay_llama_factory(c: dict[str, Any], tmp_path: Path) -> None:
    plan = BatchPlan(SamplerSettings(
        samples=c["rows"], micro_batch_size=c["micro_batch_size"], gradient_accumulation_steps=c["gradient_accumulation_steps"],
        world_size=c["world_size"], seed=c["seed"], data_seed=c["data_seed"], shuffle=not c["disable_shuffling"],
        drop_last=c["drop_last"], epochs=c["epochs"], max_steps=c["max_steps"]))
    assert_plan_equals(plan, c, "LLaMA-Factory")


AXOLOTL_PREPARE_GOLDENS = FIXTURES / "batch-plan" / "axolotl-0.19.0-prepare.jsonl"
AXOLOTL_PREPARE_TOOL = "tools/axolotl_prepare_goldens.py"
AXOLOTL_PREPARE_COMMAND = ("nice -n 10 /work/venvs/axolotl-sampler/bin/python tools/axolotl_prepare_goldens.py "
                           "--configs 200")


def prepare_case_id(c: dict[str, Any]) -> str:
    return f"d{len(c['datasets'])}-n{sum(len(d) for d in c['datasets'])}" + ("-error" if "error" in c else "")


def prepare_cases() -> list[ParameterSet]:
    return [pytest.param(c, id=f"{number}:{prepare_case_id(c)}")
            for number, c in enumerate(load(AXOLOTL_PREPARE_GOLDENS)[1])]


def replay_axolotl_prepare(c: dict[str, Any], tmp_path: Path) -> None:
    """axolotl's prepared train and eval rows (by uid: a planted duplicate shares its row's), or its refusal."""
    datasets = [[EncodedRow(d, r, length, trained, (uid, length, trained)) for r, (uid, length, trained) in enumerate(rows)]
                for d, rows in enumerate(c["datasets"])]
    settings = Preparation.of_config({k: v for k, v in c.items() if k not in ("datasets", "train", "eval", "undecided",
                                                                              "error")})
    if "error" in c:
        with pytest.raises(NotPrepared):
            prepared_rows(datasets, settings)
        return
    if "seed" not in c and settings.shuffles(len(datasets)) and sum(len(d) for d in datasets) > 1:
        with pytest.raises(NotPrepared, match="sets no seed"):
            prepared_rows(datasets, settings)
        # axolotl's two preparations drew different orders (a few rows may repeat one by chance)
        assert c["undecided"] or len(c["train"]) + len(c["eval"]) <= 3
        return
    train, held = prepared_rows(datasets, settings)
    uid = {(row.dataset, row.row): c["datasets"][row.dataset][row.row][0] for d in datasets for row in d}
    assert [uid[(r.dataset, r.row)] for r in train] == c["train"]
    assert [uid[(r.dataset, r.row)] for r in held] == c["eval"]
