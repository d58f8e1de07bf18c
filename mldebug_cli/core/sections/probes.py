"""check-template's section: each probe conversation rendered on both sides, its text and token differences."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HunkView:
    """One differing stretch of text between the train and deploy prompts of a probe."""

    kind: str | None  # bos-eos, whitespace, system-block, role-marker, date, ... (the difference's class)
    train_at: int  # character offset in the train prompt
    deploy_at: int
    train: str  # the text only the train side has there
    deploy: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HunkView:
        return cls(data.get("class"), data.get("train_at", 0), data.get("deploy_at", 0), data.get("train") or "",
                   data.get("deploy") or "")

    def as_dict(self) -> dict[str, Any]:
        return {"class": self.kind, "train_at": self.train_at, "deploy_at": self.deploy_at,
                "train": self.train, "deploy": self.deploy}  # fmt: skip


@dataclass(frozen=True)
class TokenDifferenceView:
    """One differing stretch of token ids, as ``id:piece`` on each side."""

    train_at: int | None
    deploy_at: int | None
    train: tuple[str, ...]
    deploy: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenDifferenceView:
        return cls(data.get("train_at"), data.get("deploy_at"), tuple(data.get("train") or ()),
                   tuple(data.get("deploy") or ()))

    def as_dict(self) -> dict[str, Any]:
        return {"train_at": self.train_at, "deploy_at": self.deploy_at, "train": list(self.train),
                "deploy": list(self.deploy)}


@dataclass(frozen=True)
class ProbeView:
    """One probe conversation rendered on both sides: its verdict, its text differences and token differences."""

    name: str
    train: str | None  # the train side's prompt (None: not rendered)
    deploy: str | None
    identical: bool  # compared, and the token ids are the same
    skipped: str | None = None  # why the probe was not compared
    deploy_error: str | None = None  # the deploy side failed to render what the train side rendered
    hunks: tuple[HunkView, ...] = ()
    token_differences: tuple[TokenDifferenceView, ...] = ()

    @property
    def compared(self) -> bool:
        return self.skipped is None and self.deploy_error is None

    @property
    def differs(self) -> bool:
        """Compared, with a difference (or not compared at all: neither skipped nor identical)."""
        return not self.skipped and not self.deploy_error and not self.identical

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], index: int = 0) -> ProbeView:
        return cls(
            name=str(data.get("name", index)),
            train=data.get("train"),
            deploy=data.get("deploy"),
            identical=bool(data.get("identical")),
            skipped=data.get("skipped") or None,
            deploy_error=data.get("deploy_error") or None,
            hunks=tuple(HunkView.from_dict(h) for h in data.get("hunks") or ()),
            token_differences=tuple(TokenDifferenceView.from_dict(t) for t in data.get("token_differences") or ()),
        )

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "train": self.train, "deploy": self.deploy,
                               "identical": self.identical}  # fmt: skip
        if self.skipped:
            out["skipped"] = self.skipped
        if self.deploy_error:
            out["deploy_error"] = self.deploy_error
        if self.compared and not self.identical:
            out["hunks"] = [h.as_dict() for h in self.hunks]
            out["token_differences"] = [t.as_dict() for t in self.token_differences]
        return out


@dataclass(frozen=True)
class ProbesSection:
    """check-template's details: every probe, in the order they were compared."""

    probes: tuple[ProbeView, ...]

    KEY = "probes"  # where the section sits in the report's details

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> ProbesSection:
        return cls(tuple(ProbeView.from_dict(p, i) for i, p in enumerate(details.get(cls.KEY) or ())))

    def as_details(self) -> dict[str, Any]:
        return {self.KEY: [p.as_dict() for p in self.probes]}


@dataclass(frozen=True)
class ProbesSummary:
    """check-template's summary: how many probes, how many compared, how many identical, findings by check."""

    probes: int = 0
    compared: int = 0
    identical: int = 0
    by_check: Mapping[str, int] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProbesSummary:
        return cls(data.get("probes", 0), data.get("compared", 0), data.get("identical", 0), data.get("by_check"))

    def as_dict(self) -> dict[str, Any]:
        return {"probes": self.probes, "compared": self.compared, "identical": self.identical,
                "by_check": dict(self.by_check or {})}
