"""What the DP checks look at: the preference run's setup, each pair (or unpaired row, or prompt), the dataset."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.findings import Location
from mldebug_cli.frameworks.trl.preference import Collated


@dataclass(frozen=True)
class PreferenceSetup:
    task: str  # dpo, kto, orpo, grpo
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
    sides: tuple[str, ...] = ()  # chosen/rejected (DPO, ORPO, KTO on pairs), completion (KTO), none (GRPO)
    unpaired: bool = False  # KTO on chosen/rejected rows: TRL unpairs each row into two (chosen desirable)
    bos_id: int | None = None  # ORPO prepends it to prompts that do not start with it
    not_emulated: tuple[str, ...] = ()  # what the config's trainer does to the rows that mldebug does not reproduce
    refusal: tuple[str, str] | None = None  # (what the trainer raises on these rows, how to convert them)
    template_closing: tuple[int, ...] = ()  # the ids the chat template writes after every final assistant reply

    @property
    def row_task(self) -> str:
        """The columns rows are read with: pairs for DPO, ORPO and KTO on pairs."""
        return "dpo" if self.task in ("dpo", "orpo") or self.unpaired else self.task


@dataclass
class Pair:
    """One row as the trainer prepares it: the prompt, and each side (chosen/rejected, or the KTO completion)."""

    index: int
    line: int | None
    path: str
    columns: frozenset[str] = frozenset()
    problem: str | None = None  # the row does not fit the task, or the template raised
    refused: str | None = None  # TRL raises on this row, for the whole dataset
    left_out: bool = False  # the framework's converter refuses the row (problem says why): dropped, the run goes on
    prompt: Any = None  # after extraction (implicit prompts)
    replies: dict[str, Any] = field(default_factory=dict)  # side -> reply (messages or text, EOS appended)
    original: dict[str, Any] = field(default_factory=dict)  # side -> the column before extraction (implicit)
    labels: dict[str, bool] = field(default_factory=dict)  # KTO: side -> desirable
    prompt_text: str = ""
    joint_text: dict[str, str] = field(default_factory=dict)  # side -> rendered prompt+reply (conversational)
    prompt_ids: list[int] = field(default_factory=list)  # the prompt alone, tokenized
    prompt_len: int = 0  # where the completion starts in prompt+reply (the shortest over the sides)
    joint_ids: dict[str, list[int]] = field(default_factory=dict)  # side -> prompt+reply ids
    shared: dict[str, int] = field(default_factory=dict)  # side -> leading ids the prompt shares with prompt+reply
    completions: dict[str, list[int]] = field(default_factory=dict)  # side -> completion ids before truncation
    sides: dict[str, Collated] = field(default_factory=dict)  # side -> the collated sequence
    dropped_sides: frozenset[str] = frozenset()  # sides the trainer's length filter removes
    answers: dict[str, str] = field(default_factory=dict)  # GRPO: answer column -> its text (what rewards compare to)

    @property
    def ok(self) -> bool:
        return self.problem is None and self.refused is None

    @property
    def dropped(self) -> bool:
        return bool(self.dropped_sides)

    def completion_ids(self, side: str) -> list[int]:
        return self.completions[side]

    def location(self, key: str | None = None) -> Location:
        return Location(path=self.path, line=self.line, row=self.index, key=key)


@dataclass(frozen=True)
class MissingColumn:
    """The rows without one reward column: how many, and the first (a count, so it does not grow with the dataset)."""

    rows: int = 0
    first: int | None = None

    def add(self, first: int | None, rows: int) -> MissingColumn:
        lowest = first if self.first is None else self.first if first is None else min(self.first, first)
        return MissingColumn(self.rows + rows, lowest)


@dataclass
class PreferenceDataset:
    """Dataset-wide tallies for the checks that judge the whole set."""

    pairs: int = 0
    chosen_tokens: int = 0  # completion tokens before truncation, over pairs
    rejected_tokens: int = 0
    chosen_longer: int = 0
    dropped: int = 0  # sequences the trainer's length filter removes, and rows the framework's converter drops
    tokens_kept: int = 0  # tokens of the sequences that train, after truncation
    labels: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})
    missing_columns: dict[str, MissingColumn] = field(default_factory=dict)  # reward column -> the rows lacking it
    keep_lengths: bool = False
    sequences: list = field(default_factory=list)  # (row, (prompt+chosen, prompt+rejected) or (prompt,), trained)

    def add(self, pair: Pair, reward_columns: tuple[str, ...]) -> None:
        for column in reward_columns:
            if column not in pair.columns:
                self.missing_columns[column] = self.missing_columns.get(column, MissingColumn()).add(pair.index, 1)
        if not pair.ok:
            self.dropped += pair.left_out
            return
        for label in pair.labels.values():
            self.labels[label] += 1
        self.dropped += len(pair.dropped_sides) if pair.labels else int(pair.dropped)  # KTO rows are its sides
        self.tokens_kept += sum(len(seq.input_ids) for side, seq in pair.sides.items() if side not in pair.dropped_sides)
        if self.keep_lengths:
            kept = [seq for side, seq in pair.sides.items() if side not in pair.dropped_sides]
            lengths = tuple(len(seq.input_ids) for seq in kept) or (len(pair.prompt_ids),)
            self.sequences.append((pair.index, lengths, sum(seq.trained for seq in kept)))
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
        self.dropped += other.dropped
        self.tokens_kept += other.tokens_kept
        for label, n in other.labels.items():
            self.labels[label] += n
        for column, missing in other.missing_columns.items():
            self.missing_columns[column] = self.missing_columns.get(column, MissingColumn()).add(missing.first, missing.rows)
        self.sequences.extend(other.sequences)

    @property
    def length_ratio(self) -> float | None:
        return self.chosen_tokens / self.rejected_tokens if self.rejected_tokens else None
