"""What the DP checks look at: the preference run's setup, each pair (or unpaired row, or prompt), the dataset."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.findings import Location
from mldebug_cli.frameworks.trl_preference import Collated


@dataclass(frozen=True)
class PreferenceSetup:
    task: str  # dpo, kto, grpo
    dataset_path: str
    tokenizer_source: str
    implicit: bool  # the first row has no prompt: TRL extracts it from chosen/rejected
    conversational: bool  # decided by the first row, for the whole dataset
    max_length: int | None
    truncation_mode: str
    eos_id: int | None
    eos_text: str | None
    stop_ids: frozenset[int]  # eos and the template's end-of-turn id
    special_texts: tuple[str, ...]
    special_pattern: re.Pattern | None
    reward_columns: tuple[str, ...]  # columns the reward functions need (GRPO)
    decode: Any  # callable ids -> text


@dataclass
class Pair:
    """One row as the trainer prepares it: the prompt, and each side (chosen/rejected, or the KTO completion)."""

    index: int
    line: int | None
    path: str
    columns: frozenset[str] = frozenset()
    problem: str | None = None  # the row does not fit the task, or the template raised
    refused: str | None = None  # TRL raises on this row, for the whole dataset
    prompt: Any = None  # after extraction (implicit prompts)
    replies: dict[str, Any] = field(default_factory=dict)  # side -> reply (messages or text, EOS appended)
    original: dict[str, Any] = field(default_factory=dict)  # side -> the column before extraction (implicit)
    label: bool | None = None  # KTO
    prompt_text: str = ""
    joint_text: dict[str, str] = field(default_factory=dict)  # side -> rendered prompt+reply (conversational)
    prompt_ids: list[int] = field(default_factory=list)  # the prompt alone, tokenized
    prompt_len: int = 0  # where the completion starts in prompt+reply
    joint_ids: dict[str, list[int]] = field(default_factory=dict)  # side -> prompt+reply ids
    sides: dict[str, Collated] = field(default_factory=dict)  # side -> the collated sequence
    dropped: bool = False

    @property
    def ok(self) -> bool:
        return self.problem is None and self.refused is None

    def completion_ids(self, side: str) -> list[int]:
        return self.joint_ids[side][self.prompt_len:]

    def location(self, key: str | None = None) -> Location:
        return Location(path=self.path, line=self.line, row=self.index, key=key)


@dataclass
class PreferenceDataset:
    """Dataset-wide tallies for the checks that judge the whole set."""

    pairs: int = 0
    chosen_tokens: int = 0  # completion tokens before truncation, over pairs
    rejected_tokens: int = 0
    chosen_longer: int = 0
    labels: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    missing_columns: dict[str, list[int]] = field(default_factory=dict)  # reward column -> rows lacking it

    def add(self, pair: Pair, reward_columns: tuple[str, ...]) -> None:
        for column in reward_columns:
            if column not in pair.columns:
                self.missing_columns.setdefault(column, []).append(pair.index)
        if not pair.ok:
            return
        if pair.label is not None:
            self.labels[pair.label] += 1
        if {"chosen", "rejected"} <= set(pair.sides):
            self.pairs += 1
            chosen, rejected = len(pair.completion_ids("chosen")), len(pair.completion_ids("rejected"))
            self.chosen_tokens += chosen
            self.rejected_tokens += rejected
            self.chosen_longer += chosen > rejected

    def merge(self, other: PreferenceDataset) -> None:
        self.pairs += other.pairs
        self.chosen_tokens += other.chosen_tokens
        self.rejected_tokens += other.rejected_tokens
        self.chosen_longer += other.chosen_longer
        for label, n in other.labels.items():
            self.labels[label] += n
        for column, rows in other.missing_columns.items():
            self.missing_columns.setdefault(column, []).extend(rows)

    @property
    def length_ratio(self) -> float | None:
        return self.chosen_tokens / self.rejected_tokens if self.rejected_tokens else None
