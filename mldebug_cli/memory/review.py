"""What the MEM checks look at: the estimate at the peak batch, the GPU, the fixes, the data behind the peak."""

from __future__ import annotations

from dataclasses import dataclass, field

from mldebug_cli.memory.batches import MicroBatch
from mldebug_cli.memory.estimate import Estimate
from mldebug_cli.memory.fixes import Fix


@dataclass(frozen=True)
class LongRow:
    row: int
    length: int  # its sequence length (the longest side for pairs)


@dataclass(frozen=True)
class MemoryReview:
    peak: Estimate  # at the batch that sets the peak
    gpu: str | None  # "H100-80GB", "40 GiB", or None (no GPU given)
    gpu_bytes: int | None
    fixes: tuple[Fix, ...] = ()
    typical: Estimate | None = None  # at a batch of the median length (what most steps need)
    long_rows: tuple[LongRow, ...] = ()  # rows far longer than the rest, longest first
    lengths_from: str = "data"  # "data" (every row), "sample of N rows", or "max_length" (no data read)
    host_bytes: int | None = None  # host RAM the workers and offload need
    host_total: int | None = None  # host RAM of this machine
    keys: dict = field(default_factory=dict)  # fact -> config key (trainer facts)
    rows_not_read: str | None = None  # why the rows were not read (every sequence then at max_length)

    @property
    def batch(self) -> MicroBatch:
        return self.peak.batch

    def key(self, fact: str, default: str) -> str:
        return self.keys.get(fact, default)
