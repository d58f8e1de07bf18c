"""inspect-data's sections on DPO/KTO/GRPO rows: each shown pair with its sides as the trainer sees them, and the
preference statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.core.sections.rows import RowsSection, RowsSummary

PAIRED = ("chosen", "rejected")


@dataclass(frozen=True)
class SideView:
    """One sequence of a row: chosen, rejected, a KTO completion, or a GRPO prompt; ids, labels and token texts."""

    name: str  # chosen, rejected, completion (a KTO row of its own), prompt (GRPO: what generation starts after)
    input_ids: Sequence[int] = ()
    labels: Sequence[int] = ()
    pieces: Sequence[str] | None = None  # filled in for the rows finally shown
    texts: Sequence[str] | None = None  # the text each token decodes to
    truncated_from: int | None = None  # prompt and completion tokens before the completion was cut
    label: bool | None = None  # KTO: desirable or not
    dropped: bool = False  # KTO unpaired: the trainer leaves this side's row out

    @property
    def trained(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE_INDEX)

    @property
    def prompt_part(self) -> int:
        """How many leading tokens are masked prompt."""
        return next((pos for pos, label in enumerate(self.labels) if label != IGNORE_INDEX), len(self.labels))

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> SideView:
        return cls(name, data.get("input_ids") or [], data.get("labels") or [], data.get("pieces"), data.get("texts"),
                   data.get("truncated_from"), data.get("label"), bool(data.get("dropped")))

    def fields(self) -> dict[str, Any]:
        """The side's keys as the JSON report has them, without the token texts (they come last)."""
        out: dict[str, Any] = {"input_ids": self.input_ids, "labels": self.labels, "pieces": self.pieces}
        if self.truncated_from is not None:
            out["truncated_from"] = self.truncated_from
        if self.label is not None:
            out["label"] = self.label
        if self.dropped:
            out["dropped"] = True
        return out

    def as_dict(self) -> dict[str, Any]:
        out = self.fields()
        if self.texts is not None:
            out["texts"] = self.texts
        return out


@dataclass(frozen=True)
class PairView:
    """One shown preference row: the prompt once and each side; for GRPO the prompt's tokens alone."""

    row: int
    task: str  # dpo, orpo, kto, grpo, ...
    line: int | None = None
    error: str | None = None  # why the row was not prepared (None: it was, unless ``ok`` says otherwise)
    ok: bool = True  # prepared (the JSON report has an "error" key when not)
    dropped: bool = False  # the trainer leaves the row out
    prompt: str = ""
    prompt_tokens: int | None = None  # the shared prompt's length in tokens
    unpaired: bool = False  # KTO: each side trains as a row of its own, chosen desirable
    sides: tuple[SideView, ...] = ()  # chosen and rejected, or one completion; none for GRPO
    first_difference: int | None = None  # the first token where chosen and rejected differ
    prompt_input_ids: Sequence[int] | None = None  # GRPO
    prompt_pieces: Sequence[str] | None = None
    prompt_texts: Sequence[str] | None = None

    @property
    def paired(self) -> bool:
        return any(side.name in PAIRED for side in self.sides)

    def side(self, name: str) -> SideView | None:
        return next((side for side in self.sides if side.name == name), None)

    def prompt_side(self) -> SideView:
        """GRPO: the prompt's tokens as a side of their own, all masked (generation starts after them)."""
        ids = self.prompt_input_ids or []
        return SideView("prompt", ids, [IGNORE_INDEX] * len(ids), None, self.prompt_texts)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairView:
        sides = tuple(SideView.from_dict(name, data[name]) for name in data if name in PAIRED)
        if not sides and "input_ids" in data:
            sides = (SideView.from_dict("completion", data),)
        return cls(data.get("row", 0), data.get("task", ""), data.get("line"), data.get("error"), "error" not in data,
                   bool(data.get("dropped")), data.get("prompt") or "", data.get("prompt_tokens"),
                   bool(data.get("unpaired")), sides, data.get("first_difference"), data.get("prompt_input_ids"),
                   data.get("prompt_pieces"), data.get("prompt_texts"))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.row, "task": self.task}
        if self.line is not None:
            out["line"] = self.line
        if not self.ok:
            out["error"] = self.error
            if self.dropped:
                out["dropped"] = True
            return out
        out["prompt"] = self.prompt
        if self.dropped:
            out["dropped"] = True
        if self.prompt_input_ids is not None:
            out["prompt_input_ids"] = self.prompt_input_ids
            if self.prompt_pieces is not None:
                out["prompt_pieces"] = self.prompt_pieces
            if self.prompt_texts is not None:
                out["prompt_texts"] = self.prompt_texts
            return out
        out["prompt_tokens"] = self.prompt_tokens
        if self.unpaired:
            out["unpaired"] = True
        completion = None
        for side in self.sides:
            if side.name == "completion":  # a KTO row's completion: its keys are the row's own
                out.update(side.fields())
                completion = side
            else:
                out[side.name] = side.as_dict()
        if self.first_difference is not None:
            out["first_difference"] = self.first_difference
        if completion is not None and completion.texts is not None:
            out["texts"] = completion.texts
        return out


@dataclass(frozen=True)
class PairsSummary:
    """inspect-data's statistics on preference rows (``Report.summary``)."""

    rows: int = 0
    rows_checked: int = 0
    pairs: int = 0
    chosen_rejected_length_ratio: float | None = None
    chosen_longer_share: float | None = None
    desirable: int = 0  # KTO labels
    undesirable: int = 0
    sequences_per_row: int = 1  # the rows the trainer iterates per dataset row (KTO unpairs each into two)
    rows_dropped: int = 0  # removed by the trainer's length filter or its converter
    tokens_kept: int = 0
    by_check: Mapping[str, int] | None = None

    KEY = "pairs"  # a summary with this key is a preference summary
    lengths_kept = ()  # (tokens, rows) of the rows that train: counted per sequence (sequence_lengths) instead
    lengths_untrained = ()

    @classmethod
    def describes(cls, summary: Mapping[str, Any]) -> bool:
        return cls.KEY in summary

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairsSummary:
        labels = data.get("labels") or {}
        return cls(data.get("rows") or 0, data.get("rows_checked") or 0, data.get("pairs") or 0,
                   data.get("chosen_rejected_length_ratio"), data.get("chosen_longer_share"),
                   labels.get("desirable", 0), labels.get("undesirable", 0), data.get("sequences_per_row", 1),
                   data.get("rows_dropped", 0), data.get("tokens_kept", 0), data.get("by_check"))

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "rows_checked": self.rows_checked,
            "pairs": self.pairs,
            "chosen_rejected_length_ratio": self.chosen_rejected_length_ratio,
            "chosen_longer_share": self.chosen_longer_share,
            "labels": {"desirable": self.desirable, "undesirable": self.undesirable},
            "sequences_per_row": self.sequences_per_row,
            "rows_dropped": self.rows_dropped,
            "tokens_kept": self.tokens_kept,
            "by_check": dict(self.by_check or {}),
        }


@dataclass(frozen=True)
class PairsSection:
    """inspect-data's details on preference rows: the shown rows."""

    rows: tuple[PairView, ...]
    sequence_lengths: Sequence[Any] | None = None  # every kept row's (row, sequence lengths, trained) for memory

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> PairsSection:
        return cls(tuple(PairView.from_dict(r) for r in details.get("rows") or ()), details.get("sequence_lengths"))

    def as_details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": [r.as_dict() for r in self.rows]}
        if self.sequence_lengths is not None:
            out["sequence_lengths"] = self.sequence_lengths
        return out


def data_summary(summary: Mapping[str, Any]) -> RowsSummary | PairsSummary:
    """inspect-data's summary, on SFT rows or on preference rows."""
    return PairsSummary.from_dict(summary) if PairsSummary.describes(summary) else RowsSummary.from_dict(summary)


def data_section(summary: Mapping[str, Any], details: Mapping[str, Any]) -> RowsSection | PairsSection:
    """inspect-data's details, on SFT rows or on preference rows (told apart by the summary)."""
    return PairsSection.from_details(details) if PairsSummary.describes(summary) else RowsSection.from_details(details)
