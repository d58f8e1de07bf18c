"""lr-plot's sections: the simulated schedule (one point per optimizer step), the step arithmetic behind it, and the
logged LR of a run laid over it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SchedulePoint:
    """The LR the scheduler gives at one optimizer step, and where in the data that step is."""

    step: int
    lr: float
    epoch: Any = None  # the epoch the step falls in (a float for a partial epoch)
    micro_batch: int | None = None  # micro-batches consumed per process

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SchedulePoint:
        return cls(data["step"], data["lr"], data.get("epoch"), data.get("micro_batch"))

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "lr": self.lr, "epoch": self.epoch, "micro_batch": self.micro_batch}


@dataclass(frozen=True)
class LoggedPoint:
    """An LR the run logged at a step, and the simulated one there."""

    step: int | None
    lr: float | None
    simulated: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoggedPoint:
        return cls(data.get("step"), data.get("lr"), data.get("simulated"))

    def as_dict(self) -> dict[str, Any]:
        return {"step": self.step, "lr": self.lr, "simulated": self.simulated}


@dataclass(frozen=True)
class Explanation:
    """The best explanation of the logged LR's difference from the simulation."""

    kind: str | None
    message: str | None
    matched: int | None = None
    total: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Explanation | None:
        return None if data is None else cls(data.get("kind"), data.get("message"), data.get("matched"), data.get("total"))

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "matched": self.matched, "total": self.total}


@dataclass(frozen=True)
class Overlay:
    """A run's logged LR (trainer_state.json) against the simulated schedule."""

    trainer_state: str | None
    run_max_steps: int | None = None
    mismatched: int = 0
    logged: tuple[LoggedPoint, ...] = ()
    explanation: Explanation | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Overlay | None:
        if not data:
            return None
        return cls(data.get("trainer_state"), data.get("run_max_steps"), data.get("mismatched", 0),
                   tuple(LoggedPoint.from_dict(p) for p in data.get("logged") or ()),
                   Explanation.from_dict(data.get("explanation")))

    def as_dict(self) -> dict[str, Any]:
        return {"trainer_state": self.trainer_state, "run_max_steps": self.run_max_steps, "mismatched": self.mismatched,
                "logged": [p.as_dict() for p in self.logged],
                "explanation": None if self.explanation is None else self.explanation.as_dict()}


@dataclass(frozen=True)
class ScheduleSection:
    """lr-plot's details (merged into the report's top level): the step arithmetic and the curve.

    ``simulated`` False: the config could not be simulated, and the section is an empty schedule.
    """

    schedule: tuple[SchedulePoint, ...] = ()
    simulated: bool = True
    framework: str | None = None
    framework_version: str | None = None
    engine: str | None = None
    scheduler: str | None = None
    scheduler_kwargs: Mapping[str, Any] = field(default_factory=dict)
    learning_rate: float | None = None
    train_rows: int | None = None
    world_size: int | None = None
    gradient_accumulation_steps: int | None = None
    total_optimizer_steps: int | None = None
    optimizer_steps_run: int | None = None
    warmup_steps: int | None = None
    micro_batches_per_epoch: int | None = None
    optimizer_steps_per_epoch: int | None = None
    epochs: float | None = None
    epochs_requested: float | None = None
    epoch_loops: Any = None
    total_optimizer_steps_range: Sequence[int | None] | None = None  # (low, high) with packing (low None: at most)
    packing: Any = None
    log_offset: Any = None
    scheduler_error: str | None = None
    scheduler_fails_after_step: int | None = None
    generation_batching: Mapping[str, Any] | None = None
    overlay: Overlay | None = None
    plot: str | None = None

    KEY = "schedule"  # a report's details with this key hold an LR schedule

    @property
    def peak(self) -> SchedulePoint:
        return max(self.schedule, key=lambda p: p.lr)

    @property
    def warmup_end(self) -> int | None:
        """The first step after warmup, where the LR reaches its peak (None without warmup)."""
        warmup, total = self.warmup_steps or 0, self.total_optimizer_steps or 0
        return warmup + 1 if 0 < warmup < total else None

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> ScheduleSection:
        schedule = tuple(SchedulePoint.from_dict(p) for p in details.get("schedule") or ())
        values: dict[str, Any] = {name: details.get(name) for name in _FIELDS}
        values["scheduler_kwargs"] = details.get("scheduler_kwargs") or {}
        return cls(schedule=schedule, simulated="framework" in details, overlay=Overlay.from_dict(details.get("overlay")),
                   **values)

    def as_details(self) -> dict[str, Any]:
        schedule = [p.as_dict() for p in self.schedule]
        if not self.simulated:
            return {"schedule": schedule}
        out: dict[str, Any] = {name: getattr(self, name) for name in _FIELDS[: _FIELDS.index("log_offset") + 1]}
        out["scheduler_kwargs"] = dict(self.scheduler_kwargs)
        out["schedule"] = schedule
        out["scheduler_error"] = self.scheduler_error
        out["scheduler_fails_after_step"] = self.scheduler_fails_after_step
        if self.generation_batching is not None:
            out["generation_batching"] = dict(self.generation_batching)
        if self.overlay is not None:
            out["overlay"] = self.overlay.as_dict()
        if self.plot is not None:
            out["plot"] = self.plot
        return out


# The section's plain fields in the JSON report's order (scheduler_kwargs is written in its place by as_details).
_FIELDS = ("framework", "framework_version", "engine", "scheduler", "scheduler_kwargs", "learning_rate", "train_rows",
           "world_size", "gradient_accumulation_steps", "total_optimizer_steps", "optimizer_steps_run", "warmup_steps",
           "micro_batches_per_epoch", "optimizer_steps_per_epoch", "epochs", "epochs_requested", "epoch_loops",
           "total_optimizer_steps_range", "packing", "log_offset", "scheduler_error", "scheduler_fails_after_step",
           "generation_batching", "plot")


@dataclass(frozen=True)
class ScheduleSummary:
    """lr-plot's summary: steps, warmup, peak and final LR (None where the config could not be simulated)."""

    total_optimizer_steps: int | None = None
    warmup_steps: int | None = None
    peak_lr: float | None = None
    final_lr: float | None = None
    findings: int = 0
    simulated: bool = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduleSummary:
        return cls(data.get("total_optimizer_steps"), data.get("warmup_steps"), data.get("peak_lr"),
                   data.get("final_lr"), data.get("findings", 0), "warmup_steps" in data)

    def as_dict(self) -> dict[str, Any]:
        if not self.simulated:
            return {"total_optimizer_steps": self.total_optimizer_steps, "findings": self.findings}
        return {"total_optimizer_steps": self.total_optimizer_steps, "warmup_steps": self.warmup_steps,
                "peak_lr": self.peak_lr, "final_lr": self.final_lr, "findings": self.findings}
