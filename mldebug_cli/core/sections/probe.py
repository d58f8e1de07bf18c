"""probe's sections: each loss term's push and gradient, the cosines between terms, the tensors and tokens measured,
the optimizer's and the update's readings, the first non-finite value, the term-off run, and the debugging map's
row the run falls in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TermView:
    """One loss term: its weight, the metric it pushes, its gradient norm, its push on each row's metric and its loss."""

    name: str
    weight: float
    metric: str
    grad_norm: float | None
    rows: Sequence[int] = ()
    push: Sequence[float | None] = ()
    metric_values: Sequence[float | None] = ()
    losses: Sequence[float | None] = ()  # the term's loss on each probed batch
    row_names: Sequence[str] = ()  # how the rows are named when they are not dataset rows (GRPO: prompts)
    idle: str | None = None  # why a term has no gradient by design (GRPO's KL before the policy leaves the reference)
    source: str | None = None  # FILE:FUNCTION of the user's own term (--loss-term)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TermView:
        return cls(data.get("name", ""), data.get("weight", 1.0), data.get("metric", ""), data.get("grad_norm"),
                   data.get("rows") or [], data.get("push") or [], data.get("metric_values") or [],
                   data.get("losses") or [], data.get("row_names") or (), data.get("idle"), data.get("source"))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "weight": self.weight, "metric": self.metric, "grad_norm": self.grad_norm,
                "rows": list(self.rows), "push": list(self.push), "metric_values": list(self.metric_values),
                "losses": list(self.losses), **({"row_names": list(self.row_names)} if self.row_names else {}),
                **({"idle": self.idle} if self.idle else {}), **({"source": self.source} if self.source else {})}


@dataclass(frozen=True)
class CosineView:
    """The cosine between two terms' gradients."""

    first: str
    second: str
    cosine: float | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CosineView:
        terms = list(data.get("terms") or ("", ""))
        return cls(terms[0], terms[1], data.get("cosine"))

    def as_dict(self) -> dict[str, Any]:
        return {"terms": [self.first, self.second], "cosine": self.cosine}


@dataclass(frozen=True)
class TensorView:
    name: str
    numel: int
    grad_norm: float | None
    exempt: Any = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TensorView:
        return cls(data.get("name", ""), data.get("numel", 0), data.get("grad_norm"), data.get("exempt"))

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "numel": self.numel, "grad_norm": self.grad_norm, "exempt": self.exempt}


@dataclass(frozen=True)
class TokenView:
    """A token the probe looked at: its id and text, the rows it is in, its embedding norm ratio, whether it learns."""

    id: int
    text: str
    rows: Sequence[int] = ()
    norm_ratio: float | None = None
    learnable: Any = None
    how: Any = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenView:
        return cls(data.get("id", 0), data.get("text", ""), data.get("rows") or [], data.get("norm_ratio"),
                   data.get("learnable"), data.get("how"))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "rows": list(self.rows), "norm_ratio": self.norm_ratio,
                "learnable": self.learnable, "how": self.how}


@dataclass(frozen=True)
class OptimizerView:
    cosine: float | None
    against_share: float | None
    step_ratio: float | None
    step: int | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> OptimizerView | None:
        return None if not data else cls(data.get("cosine"), data.get("against_share"), data.get("step_ratio"),
                                         data.get("step"))

    def as_dict(self) -> dict[str, Any]:
        return {"cosine": self.cosine, "against_share": self.against_share, "step_ratio": self.step_ratio,
                "step": self.step}


@dataclass(frozen=True)
class UpdateRatioView:
    """The median update/parameter RMS ratio of one step at the config's LR."""

    median: float | None
    learning_rate: float
    optimizer: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> UpdateRatioView | None:
        return None if not data else cls(data.get("median"), data.get("learning_rate", 0.0), data.get("optimizer"))

    def as_dict(self) -> dict[str, Any]:
        return {"median": self.median, "learning_rate": self.learning_rate, "optimizer": self.optimizer}


@dataclass(frozen=True)
class NonFiniteView:
    module: str | None
    phase: str | None
    value: Any
    before: Sequence[Sequence[Any]] = ()  # [name, value] of the last finite readings

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> NonFiniteView | None:
        return None if not data else cls(data.get("module"), data.get("phase"), data.get("value"),
                                         data.get("before") or [])

    def as_dict(self) -> dict[str, Any]:
        return {"module": self.module, "phase": self.phase, "value": self.value, "before": [list(b) for b in self.before]}


@dataclass(frozen=True)
class AblationView:
    """A few steps with and without a term: the metric at the start, with the term, without it."""

    term: str
    steps: int
    metric: str
    start: float | None
    with_term: float | None
    without_term: float | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> AblationView | None:
        if not data:
            return None
        return cls(data.get("term", ""), data.get("steps", 0), data.get("metric", ""), data.get("start"),
                   data.get("with"), data.get("without"))

    def as_dict(self) -> dict[str, Any]:
        return {"term": self.term, "steps": self.steps, "metric": self.metric, "start": self.start,
                "with": self.with_term, "without": self.without_term}


@dataclass(frozen=True)
class MetricView:
    """The user's own metric: its value and d(metric)/d(param) over all trainable tensors and per parameter group."""

    source: str
    value: float | None
    grad_norm: float | None
    groups: Sequence[Sequence[Any]] = ()  # [group, tensors, gradient norm or None]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MetricView | None:
        return None if not data else cls(data.get("source", ""), data.get("value"), data.get("grad_norm"),
                                         data.get("groups") or [])

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "value": self.value, "grad_norm": self.grad_norm,
                "groups": [list(g) for g in self.groups]}


@dataclass(frozen=True)
class MapRow:
    """The row of the debugging map the run falls in: its name, when it applies, how to read it."""

    row: str
    when: str
    reading: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MapRow | None:
        return None if not data else cls(data.get("row", ""), data.get("when", ""), data.get("reading", ""))

    def as_dict(self) -> dict[str, str]:
        return {"row": self.row, "when": self.when, "reading": self.reading}


@dataclass(frozen=True)
class ProbeSection:
    """probe's details: ``probe`` (the readings) and ``map`` (the debugging map's row)."""

    terms: tuple[TermView, ...] = ()
    cosines: tuple[CosineView, ...] = ()
    tensors: tuple[TensorView, ...] = ()
    tokens: tuple[TokenView, ...] = ()
    optimizer: OptimizerView | None = None
    update_ratio: UpdateRatioView | None = None
    non_finite: NonFiniteView | None = None
    ablation: AblationView | None = None
    metric: MetricView | None = None
    map: MapRow | None = None

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> ProbeSection:
        probe = details.get("probe") or {}
        return cls(terms=tuple(TermView.from_dict(t) for t in probe.get("terms") or ()),
                   cosines=tuple(CosineView.from_dict(c) for c in probe.get("cosines") or ()),
                   tensors=tuple(TensorView.from_dict(t) for t in probe.get("tensors") or ()),
                   tokens=tuple(TokenView.from_dict(t) for t in probe.get("tokens") or ()),
                   optimizer=OptimizerView.from_dict(probe.get("optimizer")),
                   update_ratio=UpdateRatioView.from_dict(probe.get("update_ratio")),
                   non_finite=NonFiniteView.from_dict(probe.get("non_finite")),
                   ablation=AblationView.from_dict(probe.get("ablation")),
                   metric=MetricView.from_dict(probe.get("metric")), map=MapRow.from_dict(details.get("map")))

    def as_details(self) -> dict[str, Any]:
        def part(view):
            return None if view is None else view.as_dict()

        probe = {"terms": [t.as_dict() for t in self.terms], "cosines": [c.as_dict() for c in self.cosines],
                 "tensors": [t.as_dict() for t in self.tensors], "tokens": [t.as_dict() for t in self.tokens],
                 "optimizer": part(self.optimizer), "update_ratio": part(self.update_ratio),
                 "non_finite": part(self.non_finite), "ablation": part(self.ablation), "metric": part(self.metric)}
        return {"probe": probe, "map": part(self.map)}


@dataclass(frozen=True)
class ProbeSummary:
    rows: int
    terms: Sequence[str]
    trainable_tensors: int
    seconds: float
    findings: int

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "terms": list(self.terms), "trainable_tensors": self.trainable_tensors,
                "seconds": self.seconds, "findings": self.findings}
