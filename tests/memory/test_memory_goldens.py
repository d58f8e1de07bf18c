"""The estimator against the memory real trainers used on a GPU (fixtures/memory-goldens, by tools/memory_goldens.py).

Each golden ran the transformers Trainer or a TRL trainer for a few steps on a randomly initialised model built from
a published config and recorded ``torch.cuda.max_memory_allocated()``. The estimate is within 10% of it, and its
verdict against the GPU the golden ran on (fits / runs out of memory) is the one the run gave. The batches the
trainer's collator built (their shapes, recorded per step) are the batches the estimator builds.
"""

from __future__ import annotations

import json

import pytest
from golden_setups import GOLDENS, golden_batches, golden_estimate

GOLDEN_FILES = sorted(GOLDENS.glob("*.json")) if GOLDENS.is_dir() else []
TOLERANCE = 0.10

pytestmark = pytest.mark.skipif(not GOLDEN_FILES, reason=f"no memory goldens in {GOLDENS} (tools/memory_goldens.py)")


def _load(path):
    record = json.loads(path.read_text())
    if "failed" in record:
        pytest.skip(f"{path.name}: the golden run failed: {record['failed'][:200]}")
    return record


@pytest.mark.replay
@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_estimate_within_tolerance_of_max_memory_allocated(path):
    record = _load(path)
    if record["oom"]:
        pytest.skip("ran out of memory: its verdict is tested below")
    estimated = golden_estimate(record).allocated
    measured = record["max_memory_allocated"]
    assert estimated == pytest.approx(measured, rel=TOLERANCE), (
        f"{path.stem}: estimated {estimated / 2**30:.2f} GiB, measured {measured / 2**30:.2f} GiB")


@pytest.mark.replay
@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_verdict_is_the_runs(path):
    record = _load(path)
    estimate = golden_estimate(record)
    assert (estimate.per_gpu > record["gpu_total"]) == record["oom"]


@pytest.mark.replay
@pytest.mark.parametrize("path", GOLDEN_FILES, ids=[p.stem for p in GOLDEN_FILES])
def test_batches_are_the_collators(path):
    record = _load(path)
    setting = record["setting"]
    if setting["trainer"] == "grpo" or not record["batch_shapes"]:
        pytest.skip("GRPO's collator hands over prompts; its batches are built at generation")
    steps = setting.get("steps", 3)
    built = [[b.sequences, b.length] for b in golden_batches(setting, record.get("prepared_lengths"))]
    if setting.get("packing"):  # flattened packs: the fullest batch is the estimate's
        fullest = max(length for _, length in record["batch_shapes"][:steps])
        assert fullest == pytest.approx(built[0][1], rel=0.05) and fullest <= built[0][1]
        return
    assert record["batch_shapes"][:steps] == built[:steps]
