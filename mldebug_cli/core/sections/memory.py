"""memory's sections: the terms of the peak with their formulas, the peak batch, the GPUs it fits and the fixes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TermView:
    """One term of the memory at the peak (weights, gradients, optimizer state, activations, logits...)."""

    name: str
    bytes: int
    gib: float
    formula: str
    source: str | None
    moment: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TermView:
        return cls(data.get("name", ""), data.get("bytes", 0), data.get("gib", 0.0), data.get("formula", ""),
                   data.get("source"), data.get("moment", ""))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "bytes": self.bytes, "gib": self.gib, "formula": self.formula,
                "source": self.source, "moment": self.moment}


@dataclass(frozen=True)
class BatchView:
    """The batch that sets the peak: sequences × length, its tokens, the rows in it and the step it comes at."""

    sequences: int
    length: int
    tokens: int = 0
    label_tokens: int = 0
    rows: Sequence[int] = ()
    step: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchView:
        return cls(data.get("sequences", 0), data.get("length", 0), data.get("tokens", 0), data.get("label_tokens", 0),
                   data.get("rows") or [], data.get("step"))

    def as_dict(self) -> dict[str, Any]:
        return {"sequences": self.sequences, "length": self.length, "tokens": self.tokens,
                "label_tokens": self.label_tokens, "rows": list(self.rows), "step": self.step}


@dataclass(frozen=True)
class LongRowView:
    row: int
    length: int

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "length": self.length}


@dataclass(frozen=True)
class GpuFit:
    """A common GPU and whether the peak fits in it."""

    name: str
    gib: float
    fits: bool

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "gib": self.gib, "fits": self.fits}


@dataclass(frozen=True)
class FixView:
    """One change to the config and the peak it gives."""

    change: str
    key: str | None
    before: int
    after: int
    note: str | None = None
    fits: bool | None = None  # None: no GPU given

    def as_dict(self) -> dict[str, Any]:
        return {"change": self.change, "key": self.key, "before": self.before, "after": self.after, "note": self.note,
                "fits": self.fits}


@dataclass(frozen=True)
class MemorySection:
    """memory's details (merged into the report's top level)."""

    terms: tuple[TermView, ...] = ()
    moments: Mapping[str, int] = field(default_factory=dict)  # allocated at each moment of a step
    peak_moment: str | None = None
    allocated: int = 0
    per_gpu: int = 0  # with the allocator's reserve and the CUDA context
    batch: BatchView | None = None
    typical: int | None = None  # per GPU, for a typical batch
    long_rows: tuple[LongRowView, ...] = ()
    gpu: str | None = None
    gpu_bytes: int | None = None
    gpus: tuple[GpuFit, ...] = ()
    fixes: tuple[FixView, ...] = ()
    host_bytes: int | None = None
    host_total: int | None = None
    lengths: str | None = None  # where the row lengths came from

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> MemorySection:
        batch = details.get("batch")
        return cls(
            terms=tuple(TermView.from_dict(t) for t in details.get("terms") or ()),
            moments=details.get("moments") or {},
            peak_moment=details.get("peak_moment"),
            allocated=details.get("allocated", 0),
            per_gpu=details.get("per_gpu", 0),
            batch=BatchView.from_dict(batch) if batch else None,
            typical=details.get("typical"),
            long_rows=tuple(LongRowView(r.get("row", 0), r.get("length", 0)) for r in details.get("long_rows") or ()),
            gpu=details.get("gpu"),
            gpu_bytes=details.get("gpu_bytes"),
            gpus=tuple(GpuFit(g.get("name", ""), g.get("gib", 0), bool(g.get("fits"))) for g in details.get("gpus") or ()),
            fixes=tuple(FixView(f.get("change", ""), f.get("key"), f.get("before", 0), f.get("after", 0), f.get("note"),
                                f.get("fits")) for f in details.get("fixes") or ()),
            host_bytes=details.get("host_bytes"),
            host_total=details.get("host_total"),
            lengths=details.get("lengths"),
        )

    def as_details(self) -> dict[str, Any]:
        return {
            "terms": [t.as_dict() for t in self.terms],
            "moments": dict(self.moments),
            "peak_moment": self.peak_moment,
            "allocated": self.allocated,
            "per_gpu": self.per_gpu,
            "batch": None if self.batch is None else self.batch.as_dict(),
            "typical": self.typical,
            "long_rows": [r.as_dict() for r in self.long_rows],
            "gpu": self.gpu,
            "gpu_bytes": self.gpu_bytes,
            "gpus": [g.as_dict() for g in self.gpus],
            "fixes": [f.as_dict() for f in self.fixes],
            "host_bytes": self.host_bytes,
            "host_total": self.host_total,
            "lengths": self.lengths,
        }


@dataclass(frozen=True)
class MemorySummary:
    """memory's summary: the peak, allocated and per GPU, and whether it fits the GPU given."""

    peak_allocated_bytes: int = 0
    peak_per_gpu_bytes: int = 0
    peak_moment: str | None = None
    gpu_bytes: int | None = None
    fits: bool | None = None  # None: no GPU given
    largest_term: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemorySummary:
        return cls(data.get("peak_allocated_bytes", 0), data.get("peak_per_gpu_bytes", 0), data.get("peak_moment"),
                   data.get("gpu_bytes"), data.get("fits"), data.get("largest_term"))

    def as_dict(self) -> dict[str, Any]:
        return {"peak_allocated_bytes": self.peak_allocated_bytes, "peak_per_gpu_bytes": self.peak_per_gpu_bytes,
                "peak_moment": self.peak_moment, "gpu_bytes": self.gpu_bytes, "fits": self.fits,
                "largest_term": self.largest_term}
