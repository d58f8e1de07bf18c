"""axolotl's sample packing as its ``MultipackBatchSampler`` builds micro-batches, replayed without numba or torch.

axolotl 0.19.0 (``utils/samplers/multipack.py``, ``core/trainers/base.py``), verified row for row against the real
sampler by ``tools/axolotl_batch_plan_goldens.py`` (goldens in ``fixtures/batch-plan/axolotl-0.19.0.jsonl``):
- the rows come in the base sampler's order: the Trainer's seeded shuffle (accelerate's ``SeedableRandomSampler``,
  ``mldebug_cli.schedule.batch_plan.shuffled_order``) or the dataset order (``curriculum_sampling``);
- packing: rows are cut into groups of ``sample_packing_group_size`` in that order, and each group is packed
  first-fit *in order* (not sorted: ``pack_group``): a row goes into the first open bin with room for its tokens
  and fewer than ``sample_packing_bin_size`` rows, else opens a bin. ``sample_packing_sequentially`` fills one bin
  at a time instead (``allocate_sequentially``: no row cap);
- a bin holds ``micro_batch_size × sequence_len`` tokens and is one micro-batch, or with ``multipack_real_batches``
  a bin holds ``sequence_len`` tokens and ``micro_batch_size`` bins make a micro-batch; a short last micro-batch is
  dropped (``drop_last=True``);
- the epoch is cut to the sampler's ``len()``, which axolotl fixes when the sampler is made: the fewest micro-batches
  of 1 to 4 packings of orders drawn from the *global* torch RNG (whose state the config does not decide). mldebug
  takes this epoch's own count unless told (``epoch_batches``) and says so; the rows of every step it names are
  exact as long as the run has that step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

DEFAULT_BIN_SIZE = 200  # axolotl 0.19.0 utils/schemas/config.py: sample_packing_bin_size
DEFAULT_GROUP_SIZE = 100_000  # sample_packing_group_size


@dataclass(frozen=True)
class MultipackSettings:
    """What decides how axolotl packs rows: their token lengths and the bins' capacity."""

    lengths: tuple[int, ...]  # tokens per row of the trainer's dataset
    sequence_len: int
    micro_batch_size: int = 1
    real_batches: bool = False  # multipack_real_batches
    bin_size: int = DEFAULT_BIN_SIZE  # rows per bin at most (not for sequential packing)
    group_size: int = DEFAULT_GROUP_SIZE
    sequential: bool = False  # sample_packing_sequentially

    @property
    def capacity(self) -> int:
        """Tokens per bin (``batch_max_len``)."""
        return self.sequence_len if self.real_batches else self.micro_batch_size * self.sequence_len

    @property
    def bins_per_batch(self) -> int:
        return self.micro_batch_size if self.real_batches else 1

    def describe(self) -> str:
        how = "one bin at a time" if self.sequential else f"first fit in order, ≤ {self.bin_size} rows a bin"
        batch = (f"{self.micro_batch_size} bins of {self.capacity:,} tokens" if self.real_batches
                 else f"one bin of {self.capacity:,} tokens")
        return f"axolotl multipack ({how}), micro-batches of {batch}"


def packed_batches(order: Sequence[int], settings: MultipackSettings) -> list[list[int]]:
    """The micro-batches (rows, bin after bin) of one epoch whose rows come in ``order``."""
    lengths = [settings.lengths[i] for i in order]
    if settings.sequential:
        bins = pack_sequentially(lengths, settings.capacity)
    else:
        bins = []
        size = max(settings.group_size, 1)
        for start in range(0, len(lengths), size):
            bins += [[start + i for i in b] for b in pack_first_fit(lengths[start:start + size], settings.capacity,
                                                                   settings.bin_size or settings.capacity)]
    per = settings.bins_per_batch
    batches = [bins[i:i + per] for i in range(0, len(bins), per)]
    if batches and len(batches[-1]) < per:
        batches.pop()
    return [[order[p] for b in batch for p in b] for batch in batches]


def pack_first_fit(lengths: Sequence[int], capacity: int, bin_size: int) -> list[list[int]]:
    """axolotl's ``pack_group``: each item into the first bin (in opening order) with room and fewer than
    ``bin_size`` items, else a new bin. A segment tree over the bins' free room finds that bin in O(log bins)."""
    count = len(lengths)
    width = 1
    while width < max(count, 1):
        width *= 2
    free = [-1] * (2 * width)  # max room over each node's bins; -1: no bin, or a full one
    bins: list[list[int]] = []
    for item, size in enumerate(lengths):
        node = 1
        if free[1] >= size:
            while node < width:
                node = 2 * node if free[2 * node] >= size else 2 * node + 1
            at = node - width
            bins[at].append(item)
            room = free[node] - size
        else:
            at = len(bins)
            bins.append([item])
            node = at + width
            room = capacity - size
        free[node] = room if len(bins[at]) < bin_size else -1
        node //= 2
        while node:
            free[node] = max(free[2 * node], free[2 * node + 1])
            node //= 2
    return bins


def pack_sequentially(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """axolotl's ``allocate_sequentially``: fill one bin in order; a row that does not fit starts the next."""
    bins: list[list[int]] = []
    current: list[int] = []
    room = capacity
    for item, size in enumerate(lengths):
        if size <= room:
            current.append(item)
            room -= size
        else:
            if current:
                bins.append(current)
            current = [item]
            room = capacity - size
    if current:
        bins.append(current)
    return bins


def multipack_plan(settings: SamplerSettings, packing: MultipackSettings, epoch_batches: int | None = None) -> BatchPlan:
    """The batch plan of a run whose micro-batches axolotl's multipack sampler builds from ``settings``' order
    (``shuffle`` false: ``curriculum_sampling``); ``epoch_batches`` is the sampler's length when known."""
    if len(packing.lengths) != settings.samples:
        raise ValueError(f"{len(packing.lengths)} lengths for {settings.samples} rows")
    return BatchPlan(settings, batcher=lambda order: packed_batches(order, packing), epoch_batches=epoch_batches)


def axolotl_total_steps(rows: int, micro_batch_size: int, gradient_accumulation_steps: int, world_size: int,
                        num_epochs: float) -> int:
    """The ``max_steps`` axolotl 0.19.0 gives the Trainer without sample packing when the config sets none
    (``utils/trainer.py`` ``calculate_total_num_steps``: ``ceil(rows × num_epochs / batch_size)``, ``batch_size``
    micro × accumulation × world size); 0 becomes -1 (the Trainer's epochs decide)."""
    return math.ceil(rows * num_epochs / (micro_batch_size * gradient_accumulation_steps * world_size)) or -1
