"""Packed sequences counted from the real token length of every row (what preflight measures).

TRL packs with ``pack_dataset(strategy="bfd")`` (trl/data_utils.py ``_pack_bfd``): each row cut to ``max_length``,
rows sorted longest first, each put into the fullest sequence it still fits in (best fit decreasing), else a new
one. ``Dataset.map`` hands the packer 1,000 rows at a time, so each batch is packed on its own, and when packing is
on SFTTrainer neither truncates nor drops the rows left with nothing to train: every non-empty row is packed.
The number of sequences depends only on the lengths (rows of equal length are interchangeable), so it is exact
for up to 1,000 rows of measured lengths; above that the batch boundaries (after TRL's shuffle) add at most one
part-filled sequence per batch. Other frameworks' packers (axolotl's multipack, LLaMA-Factory's knapsack) fill as
tightly or a little less: best fit decreasing gives their lower bound, the fill floor of ``dataset_size`` the upper.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from mldebug_cli.core.numbers import plural
from mldebug_cli.schedule.dataset_size import PACKING_FILL_FLOOR, DatasetSize, PackedRows

TRL_PACKING_BATCH = 1000  # datasets.Dataset.map's default batch_size, which pack_dataset uses


def best_fit_decreasing(lengths: Iterable[tuple[int, int]], capacity: int) -> int:
    """How many sequences of ``capacity`` tokens best fit decreasing fills with rows of these (length, count)."""
    free = _FreeSpace(capacity)
    sequences = 0
    for length, count in sorted(((min(n, capacity), c) for n, c in lengths if n > 0), reverse=True):
        for _ in range(count):
            space = free.smallest_at_least(length)
            if space is None:
                sequences += 1
                space = capacity
            else:
                free.take(space)
            if space > length:
                free.put(space - length)
    return sequences


def packed_from_lengths(packs_every_row: bool, size: DatasetSize, capacity: int) -> PackedRows:
    """Packed sequences from the measured row lengths (``size.lengths``, plus the untrained rows when the packer
    packs every row: TRL's pack_dataset)."""
    lengths = list(size.lengths) + (list(size.untrained_lengths) if packs_every_row else [])
    rows = sum(count for _, count in lengths)
    packed = best_fit_decreasing(lengths, capacity)
    basis = f"best fit decreasing over the real lengths of {plural(rows, 'row')}"
    if packs_every_row:
        batches = math.ceil(rows / TRL_PACKING_BATCH)
        exact = size.tokens_exact and batches <= 1
        basis = (f"TRL's pack_dataset (bfd) over the real lengths of {plural(rows, 'row')}"
                 + ("" if size.tokens_exact else ", scaled up from the rows checked"))
        return PackedRows(packed, packed, packed + max(batches - 1, 0), basis + f" in sequences of {capacity}", exact)
    tokens = sum(min(n, capacity) * c for n, c in lengths)
    high = max(packed, min(rows, math.ceil(tokens / (capacity * PACKING_FILL_FLOOR))))
    return PackedRows(packed, packed, high, basis + f" in sequences of {capacity}, a packer filling "
                      f"{PACKING_FILL_FLOOR:.0%} at worst")


class _FreeSpace:
    """A multiset of free space sizes in 1..capacity, with the smallest size at least n in O(log capacity)."""

    def __init__(self, capacity: int) -> None:
        self.size = 1 << max(capacity, 1).bit_length()
        self.counts = [0] * (2 * self.size)

    def put(self, space: int) -> None:
        self._add(space, 1)

    def take(self, space: int) -> None:
        self._add(space, -1)

    def _add(self, space: int, delta: int) -> None:
        i = space + self.size
        while i:
            self.counts[i] += delta
            i //= 2

    def smallest_at_least(self, n: int) -> int | None:
        """The leftmost leaf at or right of n holding a count, by walking up then down the tree."""
        i = n + self.size
        if self.counts[i]:
            return n
        while i > 1:  # climb until a right sibling's subtree holds a count
            if i % 2 == 0 and self.counts[i + 1]:
                i += 1
                break
            i //= 2
        else:
            return None
        while i < self.size:
            i = 2 * i if self.counts[2 * i] else 2 * i + 1
        return i - self.size
