"""The sampler order replayed without torch equals torch's own permutation (accelerate's seedable sampler)."""

from __future__ import annotations

import pytest

from mldebug_cli.memory.batches import shuffled_order

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n,seed", [(1, 42), (2, 42), (24, 42), (100, 0), (1000, 7), (5000, 2**33 + 5)])
def test_shuffled_order_is_torch_randperm(n, seed):
    generator = torch.Generator()
    generator.manual_seed(seed)
    assert shuffled_order(n, seed) == torch.randperm(n, generator=generator).tolist()


def test_epoch_adds_to_the_seed():
    generator = torch.Generator()
    generator.manual_seed(45)
    assert shuffled_order(50, 42, epoch=3) == torch.randperm(50, generator=generator).tolist()


def test_the_replay_equals_torch_where_torch_takes_over(monkeypatch):
    from mldebug_cli.schedule import batch_plan

    asked = batch_plan.shuffled_order(batch_plan.TORCH_FROM + 5, 3)  # torch's own randperm
    monkeypatch.setattr(batch_plan, "TORCH_FROM", 10**9)
    assert batch_plan.shuffled_order(len(asked), 3) == asked  # the pure-Python replay
