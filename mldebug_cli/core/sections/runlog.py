"""check-run's sections: the run read, each logged series' statistics, the charted series (thinned) and the steps each
finding spans."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COMPARED = "(compared run)"  # the suffix of the compared run's charts (check-run --compare): "loss (compared run)"

@dataclass(frozen=True)
class RunView:
    """The run log that was read: where, in which format, what kind of training, and its plain metadata."""

    path: str
    format: str | None = None
    kind: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunView:
        return cls(data.get("path", ""), data.get("format"), data.get("kind"), data.get("meta") or {})

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "format": self.format, "kind": self.kind, "meta": dict(self.meta)}


@dataclass(frozen=True)
class SeriesStats:
    """One logged metric: how many points, its step span, its finite range and last value, its non-finite points."""

    points: int
    first_step: int | None = None
    last_step: int | None = None
    min: float | None = None
    max: float | None = None
    last: float | None = None  # None: not finite
    non_finite: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeriesStats:
        return cls(data.get("points", 0), data.get("first_step"), data.get("last_step"), data.get("min"),
                   data.get("max"), data.get("last"), data.get("non_finite", 0))

    def as_dict(self) -> dict[str, Any]:
        return {"points": self.points, "first_step": self.first_step, "last_step": self.last_step, "min": self.min,
                "max": self.max, "last": self.last, "non_finite": self.non_finite}


@dataclass(frozen=True)
class FindingRange:
    """The optimizer steps a finding spans, on the metric it concerns."""

    code: str
    key: str | None
    first: int | None
    last: int | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FindingRange:
        return cls(data.get("code", ""), data.get("key"), data.get("first"), data.get("last"))

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "key": self.key, "first": self.first, "last": self.last}


@dataclass(frozen=True)
class RowAt:
    """A dataset row in a replayed micro-batch: its 0-based index, file line (JSONL), rank and micro-batch."""

    row: int
    line: int | None
    rank: int
    micro_batch: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowAt:
        return cls(data.get("row", 0), data.get("line"), data.get("rank", 0), data.get("micro_batch", 0))

    def as_dict(self) -> dict[str, Any]:
        return {"row": self.row, "line": self.line, "rank": self.rank, "micro_batch": self.micro_batch}


@dataclass(frozen=True)
class StepRows:
    """The rows the batch plan puts in one optimizer step that a finding names."""

    code: str
    step: int
    epoch: int
    rows: tuple[RowAt, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRows:
        return cls(data.get("code", ""), data.get("step", 0), data.get("epoch", 0),
                   tuple(RowAt.from_dict(r) for r in data.get("rows") or ()))

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "step": self.step, "epoch": self.epoch, "rows": [r.as_dict() for r in self.rows]}


@dataclass(frozen=True)
class RunSection:
    """check-run's details: the run, every series' statistics, the charted series as (step, value or None) points."""

    run: RunView
    series: Mapping[str, SeriesStats] = field(default_factory=dict)
    charts: Mapping[str, Sequence[Sequence[Any]]] = field(default_factory=dict)  # key -> [[step, value], ...]
    ranges: tuple[FindingRange, ...] = ()
    batches: tuple[StepRows, ...] = ()  # with --config: the rows behind the flagged steps

    def ranges_of(self, key: str) -> list[FindingRange]:
        return [r for r in self.ranges if r.key == key and r.first is not None]

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> RunSection:
        return cls(RunView.from_dict(details.get("run") or {}),
                   {k: SeriesStats.from_dict(v) for k, v in (details.get("series") or {}).items()},
                   details.get("charts") or {}, tuple(FindingRange.from_dict(r) for r in details.get("ranges") or ()),
                   tuple(StepRows.from_dict(b) for b in details.get("batches") or ()))

    def as_details(self) -> dict[str, Any]:
        details = {"run": self.run.as_dict(), "series": {k: s.as_dict() for k, s in self.series.items()},
                   "charts": dict(self.charts), "ranges": [r.as_dict() for r in self.ranges]}
        if self.batches:
            details["batches"] = [b.as_dict() for b in self.batches]
        return details


@dataclass(frozen=True)
class RunSummary:
    """check-run's summary."""

    format: str | None = None
    kind: str | None = None
    metrics: int = 0
    logged_points: int = 0
    last_step: int | None = None
    final_loss: float | None = None
    findings: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        return cls(data.get("format"), data.get("kind"), data.get("metrics", 0), data.get("logged_points", 0),
                   data.get("last_step"), data.get("final_loss"), data.get("findings", 0))

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "kind": self.kind, "metrics": self.metrics, "logged_points": self.logged_points,
                "last_step": self.last_step, "final_loss": self.final_loss, "findings": self.findings}
