"""preflight's sections: the parts it composed (one inspect-data per dataset, lr-plot, memory, check-template per
deploy target), each held as its command's own JSON and read back by that command's sections."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.findings import ContextValue, Finding, Report

_PART_KEYS = ("command", "target", "context", "summary", "findings")


@dataclass(frozen=True)
class PartView:
    """One command's report inside a page or a preflight report: what it checked, its findings and its own sections
    (``details``: the command's own keys, as its JSON has them; ``summary`` likewise)."""

    command: str
    target: str | None = None
    context: Mapping[str, ContextValue] = field(default_factory=dict)
    summary: Mapping[str, Any] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of_report(cls, report: Report, target: str | None = None, findings: tuple[Finding, ...] | None = None,
                  leave_out: tuple[str, ...] = ()) -> PartView:
        details = {k: v for k, v in report.details.items() if k not in leave_out}
        return cls(report.command, target, report.context, report.summary,
                   report.findings if findings is None else findings, details)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartView:
        return cls(data.get("command", ""), data.get("target"), data.get("context") or {}, data.get("summary") or {},
                   tuple(Finding.from_dict(f) for f in data.get("findings") or ()),
                   {k: v for k, v in data.items() if k not in _PART_KEYS})

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "target": self.target, "context": dict(self.context),
                "summary": dict(self.summary), "findings": [f.as_dict() for f in self.findings], **self.details}

    def summary_line(self) -> PartSummary:
        return PartSummary(self.command, self.target, len(self.findings), self.summary)


@dataclass(frozen=True)
class PartSummary:
    """A part's line in preflight's summary: its command, target, how many findings, and its own summary."""

    command: str
    target: str | None
    findings: int
    summary: Mapping[str, Any]  # the command's own summary, read back by that command's section

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartSummary:
        return cls(data.get("command", ""), data.get("target"), data.get("findings", 0),
                   {k: v for k, v in data.items() if k not in ("command", "target", "findings")})

    def as_dict(self) -> dict[str, Any]:
        return {"command": self.command, "target": self.target, "findings": self.findings, **self.summary}


@dataclass(frozen=True)
class PreflightSection:
    """preflight's details (every part) and summary (a line per part, findings by check)."""

    parts: tuple[PartView, ...]

    KEY = "sections"

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> PreflightSection:
        parts = details.get(cls.KEY)
        return cls(tuple(PartView.from_dict(p) for p in parts if isinstance(p, Mapping)) if isinstance(parts, list)
                   else ())

    @classmethod
    def has_parts(cls, details: Mapping[str, Any]) -> bool:
        return isinstance(details.get(cls.KEY), list)

    def as_details(self) -> dict[str, Any]:
        return {self.KEY: [p.as_dict() for p in self.parts]}

    def summary(self, by_check: Mapping[str, int]) -> dict[str, Any]:
        return {self.KEY: [p.summary_line().as_dict() for p in self.parts], "by_check": dict(by_check)}

    @classmethod
    def summary_lines(cls, summary: Mapping[str, Any]) -> tuple[PartSummary, ...]:
        return tuple(PartSummary.from_dict(s) for s in summary.get(cls.KEY) or ())
