"""Findings and reports: the frozen data every check produces and every format renders."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

ContextValue = str | int | None  # a context line: words, a number (max_length, world_size, workers) or not set
CONTEXT_VERSIONS = "versions"  # the context line naming the target versions of the framework's packages
CONTEXT_OPTIMIZER_STEPS = "optimizer steps"  # the config's step count, one plan for every command (step_plan.py)


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True)
class Location:
    """Where a finding points: logically (row, message, config key, probe) and physically (file, line)."""

    path: str | None = None
    row: int | None = None  # 0-based dataset index
    line: int | None = None  # 1-based line in the file, where it can be resolved
    message_index: int | None = None  # index of the message inside a conversation
    key: str | None = None  # config key path, e.g. "training.warmup_steps"
    probe: str | None = None  # probe conversation name (check-template)
    side: str | None = None  # "train" or "deploy" (check-template)
    step: int | None = None  # first optimizer step of a run-log finding (check-run)
    step_end: int | None = None  # last optimizer step of the range, when it spans several

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Location:
        """What ``as_dict`` wrote (a report read back from JSON); unknown keys are left out."""
        return cls(**{k: v for k, v in data.items() if k in _LOCATION_FIELDS})


_LOCATION_FIELDS = frozenset(Location.__dataclass_fields__)


@dataclass(frozen=True)
class Hit:
    """What a check reports; the pipeline adds the check's identity to make a Finding."""

    message: str
    hint: str | None = None
    location: Location = field(default_factory=Location)
    severity: Severity | None = None  # overrides the check's default severity
    setting: str | None = None  # the run setting that caused it, when the check knows (core.errors.SETTING_*)


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    hint: str | None
    location: Location
    setting: str | None = None  # the run setting that caused it, when the check knows (core.errors.SETTING_*)

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "location": self.location.as_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """What ``as_dict`` wrote (the findings of a preflight part, held as JSON in its report)."""
        return cls(data.get("code", ""), data.get("name", ""), Severity(data.get("severity", "info")),
                   data.get("message", ""), data.get("hint"), Location.from_dict(data.get("location") or {}))


KEPT_PER_CHECK = 1000  # findings kept in full per check of a run; the rest are counted (NotKept), so memory is flat


@dataclass(frozen=True)
class NotKept:
    """Findings of one check at one severity that were counted but not kept: past the first ``KEPT_PER_CHECK``."""

    code: str
    name: str
    severity: Severity
    count: int

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "severity": self.severity.value, "count": self.count}


class FindingKeeper:
    """Keeps the first ``limit`` findings of each check in the order they come (row order) and counts the rest, so
    what a run holds does not grow with the dataset; ``limit=None`` keeps every finding."""

    def __init__(self, limit: int | None = KEPT_PER_CHECK) -> None:
        self.limit = limit
        self.kept: list[Finding] = []
        self.by_code: Counter[str] = Counter()  # every finding, kept or not
        self._not_kept: Counter[tuple[str, str, Severity]] = Counter()

    def extend(self, findings: Iterable[Finding]) -> None:
        for f in findings:
            if self.limit is None or self.by_code[f.code] < self.limit:
                self.kept.append(f)
            else:
                self._not_kept[(f.code, f.name, f.severity)] += 1
            self.by_code[f.code] += 1

    def not_kept(self) -> tuple[NotKept, ...]:
        return tuple(NotKept(code, name, severity, n) for (code, name, severity), n in sorted(
            self._not_kept.items(), key=lambda kv: (kv[0][0], -kv[0][2].rank)))


@dataclass(frozen=True)
class Report:
    """The result of one command run.

    ``context`` says what was checked and which behaviour was assumed, one line per key (the text formats leave
    out a None line); ``summary`` holds the command's statistics; ``details`` holds command-specific JSON-ready sections
    (for inspect-data: ``rows``), each written and read back by its typed record in ``core.sections``.
    ``checks_run`` lists the codes of the checks that ran (so formats can show passing checks) and ``targets``
    the inputs they ran on. Every value is plain JSON-ready data.
    """

    command: str
    findings: tuple[Finding, ...]
    checks_run: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    context: Mapping[str, ContextValue] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    not_kept: tuple[NotKept, ...] = ()  # findings counted, not kept (past the first KEPT_PER_CHECK of a check)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        for n in self.not_kept:
            out[n.severity.value] += n.count
        return out

    def worst(self) -> Severity | None:
        severities = [f.severity for f in self.findings] + [n.severity for n in self.not_kept]
        return max(severities, key=lambda s: s.rank, default=None)

    def with_findings(self, findings: tuple[Finding, ...]) -> Report:
        return replace(self, findings=findings)
