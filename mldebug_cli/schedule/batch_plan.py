"""The batch plan: which dataset rows go into each optimizer step, replayed the way the trainer's sampler, its
accelerate data loader and its training loop build them, without torch.

The rules (transformers 5.x ``Trainer``, which TRL's SFT/DPO/KTO/ORPO/reward trainers inherit; verified row for
row against the real ``Trainer`` by ``tools/batch_plan_goldens.py``, goldens in ``fixtures/batch-plan/``):
- order: ``train_sampling_strategy: random`` (the default) is a ``RandomSampler`` that accelerate swaps for its
  ``SeedableRandomSampler``: ``torch.randperm(n)`` on a CPU generator seeded ``data_seed`` (else ``seed``, the
  Trainer's ``set_seed``) plus the epoch. ``sequential`` keeps the dataset order.
- micro-batches: ``per_device_train_batch_size`` rows at a time; ``dataloader_drop_last`` drops a short last one.
- ranks: with several processes accelerate's ``BatchSamplerShard`` deals the micro-batches round-robin (rank r
  gets micro-batches r, r + W, ...); with ``even_batches`` (the Trainer's default) a short tail is topped up from
  the first rows of the epoch so that every rank runs the same number of full micro-batches.
- steps: ``gradient_accumulation_steps`` micro-batches per optimizer step (the last step of an epoch takes the
  remainder); ``max_steps`` (else ``ceil(num_train_epochs × steps per epoch)``) ends the run, even mid-epoch.
- packing or any other regrouping of rows before the sampler: pass ``units`` (the rows behind each sample the
  sampler sees) and the plan names the original rows.
- a batch sampler that regroups rows after the order is drawn (axolotl's multipack): pass ``batcher`` (an epoch's
  sample order → its micro-batches of rows); its batches are all full, dealt round-robin over the ranks and a tail
  short of a round dropped (accelerate's ``BatchSamplerShard`` over a ``drop_last`` batch sampler), and
  ``epoch_batches`` cuts every epoch to the sampler's length where the trainer fixed it beforehand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SamplerSettings:
    """What decides the order and grouping of rows, as the trainer reads it from its config."""

    samples: int  # items the sampler draws from (rows, or packed sequences)
    micro_batch_size: int = 1  # per device
    gradient_accumulation_steps: int = 1
    world_size: int = 1
    seed: int = 42
    data_seed: int | None = None
    shuffle: bool = True  # train_sampling_strategy random (False: sequential)
    drop_last: bool = False  # dataloader_drop_last
    epochs: float = 1.0  # num_train_epochs
    max_steps: int = -1  # > 0 overrides epochs
    even_batches: bool = True  # accelerate's DataLoaderConfiguration.even_batches
    rows_note: str | None = None  # how the planned rows relate to the file's rows, said with the plan

    @property
    def sampler_seed(self) -> int:
        return self.data_seed if self.data_seed is not None else self.seed

    def describe(self) -> str:
        order = f"shuffled with seed {self.sampler_seed} (+ epoch)" if self.shuffle else "in dataset order"
        ranks = f" × {self.world_size} ranks" if self.world_size > 1 else ""
        drop = ", last short micro-batch dropped" if self.drop_last else ""
        note = f" ({self.rows_note})" if self.rows_note else ""
        return (f"{self.samples:,} samples {order}, micro-batches of {self.micro_batch_size}{ranks}, "
                f"{self.gradient_accumulation_steps} per optimizer step{drop}{note}")


@dataclass(frozen=True)
class OptimizerStep:
    step: int  # 1-based, as the Trainer logs ``global_step``
    epoch: int  # 0-based
    micro_batches: tuple[tuple[tuple[int, ...], ...], ...]  # [rank][micro-batch] → dataset rows

    @property
    def rows(self) -> tuple[int, ...]:
        """Every row of the step over all ranks (a row topped up twice by ``even_batches`` appears twice)."""
        return tuple(r for rank in self.micro_batches for batch in rank for r in batch)


class BatchPlan:
    """The optimizer steps of a run, each with its rows per rank and micro-batch."""

    def __init__(self, settings: SamplerSettings, units: Sequence[Sequence[int]] | None = None,
                 batcher: Callable[[list[int]], list[list[int]]] | None = None, epoch_batches: int | None = None):
        if settings.micro_batch_size < 1 or settings.gradient_accumulation_steps < 1 or settings.world_size < 1:
            raise ValueError("micro-batch size, gradient accumulation and world size must be at least 1")
        self.settings = settings
        self._kept: tuple[int, list[int]] | None = None
        self._kept_batches: tuple[int, list[list[int]]] | None = None
        self.batcher = batcher
        self.epoch_batches = epoch_batches
        self.units = [tuple(u) for u in units] if units is not None else None
        if self.units is not None and len(self.units) != settings.samples:
            raise ValueError(f"{len(self.units)} units for {settings.samples} samples")
        self.micro_batches_per_epoch = len(self._rank_batches(0, 0))
        ga = settings.gradient_accumulation_steps
        self.steps_per_epoch = max(math.ceil(self.micro_batches_per_epoch / ga), 1)
        if settings.max_steps > 0:
            self.total_steps = settings.max_steps
        else:
            self.total_steps = math.ceil(settings.epochs * self.steps_per_epoch)

    def steps(self) -> Iterator[OptimizerStep]:
        """Every optimizer step in order (epochs replayed lazily, so a long run costs only what is read)."""
        s = self.settings
        ga = s.gradient_accumulation_steps
        step = 0
        epoch = 0
        while step < self.total_steps and self.micro_batches_per_epoch:
            ranks = [self._rank_batches(epoch, r) for r in range(s.world_size)]
            for first in range(0, self.steps_per_epoch * ga, ga):
                step += 1
                window = tuple(tuple(self._rows(b) for b in batches[first:first + ga]) for batches in ranks)
                yield OptimizerStep(step, epoch, window)
                if step >= self.total_steps:
                    return
            epoch += 1

    def step(self, number: int) -> OptimizerStep | None:
        """Optimizer step ``number`` (1-based), or None past the end of the run."""
        if number < 1 or number > self.total_steps or not self.micro_batches_per_epoch:
            return None
        epoch, within = divmod(number - 1, self.steps_per_epoch)
        ga = self.settings.gradient_accumulation_steps
        ranks = [self._rank_batches(epoch, r) for r in range(self.settings.world_size)]
        window = tuple(tuple(self._rows(b) for b in batches[within * ga:(within + 1) * ga]) for batches in ranks)
        return OptimizerStep(number, epoch, window)

    def steps_of_rows(self, rows: set[int], epoch: int = 0) -> dict[int, int]:
        """The first optimizer step (in ``epoch``) that trains each of ``rows``."""
        found: dict[int, int] = {}
        base = epoch * self.steps_per_epoch
        ga = self.settings.gradient_accumulation_steps
        for rank in range(self.settings.world_size):
            for index, batch in enumerate(self._rank_batches(epoch, rank)):
                for row in self._rows(batch):
                    if row in rows:
                        step = base + index // ga + 1
                        found[row] = min(found.get(row, step), step)
        return {r: s for r, s in found.items() if s <= self.total_steps}

    def epoch_micro_batches(self, epoch: int = 0) -> list[tuple[int, tuple[int, ...]]]:
        """Every micro-batch of ``epoch`` on every rank as ``(optimizer step, rows)``, within the run's steps."""
        base = epoch * self.steps_per_epoch
        ga = self.settings.gradient_accumulation_steps
        found = [(base + index // ga + 1, self._rows(batch)) for rank in range(self.settings.world_size)
                 for index, batch in enumerate(self._rank_batches(epoch, rank))]
        return sorted((f for f in found if f[0] <= self.total_steps), key=lambda f: f[0])

    def _rows(self, batch: Sequence[int]) -> tuple[int, ...]:
        if self.units is None:
            return tuple(batch)
        return tuple(row for sample in batch for row in self.units[sample])

    def _order(self, epoch: int) -> list[int]:
        """The epoch's sample order, computed once for all ranks (the last epoch asked is kept)."""
        s = self.settings
        if self._kept is None or self._kept[0] != epoch:
            order = shuffled_order(s.samples, s.sampler_seed, epoch) if s.shuffle else list(range(s.samples))
            self._kept = (epoch, order)
        return self._kept[1]

    def epoch_batches_drawn(self, epoch: int) -> int:
        """The micro-batches the batch sampler itself makes in ``epoch`` (before any cut or dealing to ranks)."""
        return len(self._batched(epoch)) if self.batcher is not None else 0

    def _batched(self, epoch: int) -> list[list[int]]:
        assert self.batcher is not None
        if self._kept_batches is None or self._kept_batches[0] != epoch:
            self._kept_batches = (epoch, self.batcher(self._order(epoch)))
        return self._kept_batches[1]

    def _rank_batches(self, epoch: int, rank: int) -> list[list[int]]:
        s = self.settings
        if self.batcher is not None:
            batches = self._batched(epoch)
            if self.epoch_batches is not None:
                batches = batches[:self.epoch_batches]
            return shard_batches(batches, s.world_size, rank, 0, drop_last=True, even_batches=False)
        order = self._order(epoch)
        batches = [order[i:i + s.micro_batch_size] for i in range(0, len(order), s.micro_batch_size)]
        if s.drop_last and batches and len(batches[-1]) < s.micro_batch_size:
            batches.pop()
        if s.world_size == 1:
            return batches
        return shard_batches(batches, s.world_size, rank, s.micro_batch_size, drop_last=s.drop_last,
                             even_batches=s.even_batches)


class PlanRefused(ValueError):
    """The trainer's batches are not decided by the config and rows, or its framework stops first (the message
    says why, in one line)."""


KeptRow = tuple[int, int, int]  # a dataset row the trainer keeps, as mldebug encodes it: (row, tokens, trained tokens)


@dataclass(frozen=True)
class PreparedPlan:
    """A batch plan over the rows a framework prepares from a dataset file (merged, shuffled, filtered) before its
    sampler: ``rows[i]`` is the file row (0-based) behind the plan's sample ``i``."""

    plan: BatchPlan
    rows: tuple[int, ...]
    preparation: str  # one line: what the framework did to the rows before its sampler

    def file_rows(self, positions: Sequence[int]) -> list[int]:
        return [self.rows[i] for i in positions]


def shard_batches(batches: list[list[int]], world_size: int, rank: int, batch_size: int, *, drop_last: bool,
                  even_batches: bool) -> list[list[int]]:
    """Rank ``rank``'s micro-batches as accelerate's ``BatchSamplerShard`` (``split_batches=False``) deals them:
    round-robin over full rounds of ``world_size``; the tail is dropped (``drop_last``), given as is (no
    ``even_batches``) or topped up from the epoch's first rows so every rank gets the same count of full batches."""
    rounds = len(batches) // world_size  # rounds dealt while iterating: their last micro-batch is full
    if rounds and len(batches) % world_size == 0 and len(batches[-1]) < batch_size:
        rounds -= 1
    mine = [batches[i] for i in range(rank, rounds * world_size, world_size)]
    tail = batches[rounds * world_size:]
    if drop_last or not tail:
        return mine
    if not even_batches:
        if len(tail) > rank:
            mine.append(tail[rank])
        return mine
    pool = [r for b in batches[:world_size] for r in b]  # accelerate's "initial data" to circle back on
    while len(pool) < world_size * batch_size:
        pool += pool
    topped: list[list[int]] = []
    cycle = 0
    for batch in tail:
        if len(batch) < batch_size:
            end = cycle + batch_size - len(batch)
            batch = batch + pool[cycle:end]
            cycle = end
        topped.append(batch)
    while len(topped) < world_size:
        topped.append(pool[cycle:cycle + batch_size])
        cycle += batch_size
    mine.append(topped[rank])
    return mine


TORCH_FROM = 20_000  # rows from which torch.randperm itself is asked, when torch is installed (50× faster)


def shuffled_order(n: int, seed: int, epoch: int = 0) -> list[int]:
    """The order the Trainer's seedable sampler visits ``n`` rows in: ``torch.randperm(n)`` on a CPU generator
    seeded ``seed + epoch``: torch's own for large ``n`` when it is installed, else replayed without torch (aten
    randperm_cpu: a Fisher-Yates shuffle drawing ``mt19937() % (n - i)``; equal to torch's in
    tests/memory/test_batches.py)."""
    if n >= TORCH_FROM:
        found = _torch_randperm(n, seed + epoch)
        if found is not None:
            return found
    order = list(range(n))
    draw = _mt19937(seed + epoch)
    for i in range(n - 1):
        z = next(draw) % (n - i)
        order[i], order[z + i] = order[z + i], order[i]
    return order


def _torch_randperm(n: int, seed: int) -> list[int] | None:
    from importlib.util import find_spec

    if find_spec("torch") is None:
        return None
    import torch

    generator = torch.Generator()
    generator.manual_seed(seed)
    return torch.randperm(n, generator=generator).tolist()


def _mt19937(seed: int) -> Iterator[int]:
    """The 32-bit Mersenne Twister as at::mt19937 seeds it (init_genrand with the low 32 bits of the seed)."""
    state = [seed & 0xFFFFFFFF] + [0] * 623
    for j in range(1, 624):
        state[j] = (1812433253 * (state[j - 1] ^ (state[j - 1] >> 30)) + j) & 0xFFFFFFFF
    while True:
        for k in range(624):
            y = (state[k] & 0x80000000) | (state[(k + 1) % 624] & 0x7FFFFFFF)
            state[k] = state[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
        for y in state:
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            yield y ^ (y >> 18)
