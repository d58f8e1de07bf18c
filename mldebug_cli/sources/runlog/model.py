"""The metric model: one series per metric with names normalised across frameworks, in optimizer steps.

Key names follow HF Trainer/TRL's ``log_history`` (``loss``, ``eval_loss``, ``grad_norm``,
``learning_rate``, ``reward``, ``rewards/margins``, ``logps/chosen``...). Mirrors are renamed:
TensorBoard/W&B's ``train/x`` -> ``x`` and ``eval/x`` -> ``eval_x``; LLaMA-Factory's ``lr`` ->
``learning_rate`` and ``accuracy`` -> ``rewards/accuracies``; torchtune's ``log_probs/*`` -> ``logps/*``,
``val_loss`` -> ``eval_loss``, ``rewards`` -> ``reward``, PPO/GRPO's ``response_lengths`` ->
``completions/mean_length`` and ``clipfrac`` -> ``clip_ratio/region_mean``; TRL <= 0.16's ``completion_length`` ->
``completions/mean_length`` (when the run does not log both). Series are stored as ``array`` so a
million-step log stays small; steps logged twice keep the last write (a resume replays steps).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.sources.runlog.records import LogSink, Note

SFT, PREFERENCE, RL, REWARD_MODEL = "sft", "preference", "rl", "reward-model"
RENAMES = {"lr": "learning_rate", "val_loss": "eval_loss", "rewards": "reward", "train_loss_step": "loss",
           "response_lengths": "completions/mean_length", "clipfrac": "clip_ratio/region_mean"}
FORMAT_RENAMES = {"jsonl": {"accuracy": "rewards/accuracies"}}
SUMMARY_KEYS = frozenset({"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos",
                          "train_loss"})
INTERLEAVED_BACKS = 3  # more steps-going-back events than this: two writers, not a resume


def canonical(key: str, fmt: str) -> str:
    if key.startswith("train/"):
        key = key[len("train/"):]
    elif key.startswith(("eval/", "test/")):
        prefix, _, rest = key.partition("/")
        key = f"{prefix}_{rest}"
    if key.startswith("log_probs/"):
        key = "logps/" + key[len("log_probs/"):]
    return FORMAT_RENAMES.get(fmt, {}).get(key) or RENAMES.get(key, key)


class SeriesBuilder:
    """Appends (step, value, line); remembers whether steps went back or repeated, and repairs at the end."""

    __slots__ = ("steps", "values", "lines", "backs", "dups", "first_back", "ordered")

    def __init__(self) -> None:
        self.steps, self.values, self.lines = array("q"), array("d"), array("q")
        self.backs = self.dups = 0
        self.first_back: tuple[int, int, int] | None = None  # (from step, to step, line)
        self.ordered = True

    def add(self, step: int, value: float, line: int) -> None:
        steps = self.steps
        if steps and step <= steps[-1]:
            self.ordered = False
            if step == self.steps[-1]:
                self.dups += 1
            else:
                self.backs += 1
                if self.first_back is None:
                    self.first_back = (self.steps[-1], step, line)
        steps.append(step)
        self.values.append(value)
        self.lines.append(line)

    def build(self, key: str) -> Series:
        if self.ordered:
            return Series(key, self.steps, self.values, self.lines)
        order = sorted(range(len(self.steps)), key=self.steps.__getitem__)  # stable: later writes stay later
        steps, values, lines = array("q"), array("d"), array("q")
        for i in order:
            if steps and steps[-1] == self.steps[i]:
                values[-1], lines[-1] = self.values[i], self.lines[i]
            else:
                steps.append(self.steps[i])
                values.append(self.values[i])
                lines.append(self.lines[i])
        return Series(key, steps, values, lines)


@dataclass(frozen=True)
class Series:
    key: str
    steps: array
    values: array
    lines: array  # 1-based line in the log, 0 when unknown

    def __len__(self) -> int:
        return len(self.steps)

    def line(self, index: int) -> int | None:
        return self.lines[index] or None

    def finite(self) -> list[tuple[int, float]]:
        return [(s, v) for s, v in zip(self.steps, self.values) if math.isfinite(v)]

    def value_at(self, step: int) -> float | None:
        from bisect import bisect_left

        i = bisect_left(self.steps, step)
        return self.values[i] if i < len(self.steps) and self.steps[i] == step else None


@dataclass(frozen=True)
class Run:
    path: str
    format: str
    kind: str  # sft | preference | rl | reward-model
    series: Mapping[str, Series]
    notes: tuple[Note, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    original_keys: Mapping[str, str] = field(default_factory=dict)  # canonical -> as logged

    def get(self, key: str) -> Series | None:
        series = self.series.get(key)
        return series if series is not None and len(series) else None

    @property
    def last_step(self) -> int | None:
        return max((s.steps[-1] for s in self.series.values() if len(s)), default=None)

    @property
    def preference_loss(self) -> str | None:
        """dpo | orpo | kto | None: which preference objective the keys show."""
        if self.kind != PREFERENCE:
            return None
        if "odds_ratio_loss" in self.series or "log_odds_ratio" in self.series:
            return "orpo"
        if "kl" in self.series:
            return "kto"
        return "dpo"


class _Rows:
    """The sink's row handler: renames keys and feeds the series builders."""

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.builders: dict[str, SeriesBuilder] = {}
        self.names: dict[str, str] = {}
        self.summary: dict[str, float] = {}
        self.counter = 0
        self.unstepped = 0
        self.renamed: dict[str, str] = {}  # key as logged -> canonical name (a few dozen keys, a million rows)

    def add(self, step: int | None, values: dict[str, float], line: int | None = None) -> None:
        if any(k in values for k in ("train_runtime", "train/train_runtime")):
            self.summary.update({canonical(k, self.fmt): v for k, v in values.items()})
            return
        self.counter += 1
        if step is None:
            self.unstepped += 1
            step = self.counter
        renamed: dict[str, float] = {}
        for key, value in values.items():
            name = self.renamed.get(key)
            if name is None:
                name = self.renamed[key] = canonical(key, self.fmt)
            if name in SUMMARY_KEYS:
                continue
            if key == "completion_length" and "completions/mean_length" not in values:
                name = "completions/mean_length"  # TRL <= 0.16; Unsloth logs both (then both are kept)
            renamed[name] = value
            self.names.setdefault(name, key)
        line = line or 0
        builders = self.builders
        for name, value in renamed.items():
            builder = builders.get(name)
            if builder is None:
                builder = builders[name] = SeriesBuilder()
            builder.add(step, value, line)


def build_run(path: Path, fmt: str, fill: Callable[[LogSink], None]) -> Run:
    rows = _Rows(fmt)
    sink = LogSink(rows)
    fill(sink)
    series = {name: b.build(name) for name, b in rows.builders.items()}
    notes = list(sink.notes) + _order_notes(rows)
    if rows.unstepped:
        notes.append(Note("no-step", f"{rows.unstepped} logged rows had no step; numbered by position"))
    meta = dict(sink.meta)
    meta.update({f"final_{k}" if not k.startswith("train_") else k: v for k, v in rows.summary.items()})
    return Run(str(path), fmt, infer_kind(series), series, tuple(notes), meta, dict(rows.names))


def _order_notes(rows: _Rows) -> list[Note]:
    """One note for the worst disorder among the series (they share the rows, so one speaks for all)."""
    # epoch is in the train and the eval entry of the same step: not a duplicate
    builders = sorted(((k, b) for k, b in rows.builders.items() if k != "epoch"),
                      key=lambda kv: (kv[1].backs, kv[1].dups), reverse=True)
    if not builders:
        return []
    name, worst = builders[0]
    notes: list[Note] = []
    if worst.backs > INTERLEAVED_BACKS:
        notes.append(Note("interleaved", f"steps go back {worst.backs} times in {name!r} (two writers interleaved "
                          "in one file, or appended re-runs); each step keeps its last logged value"))
    elif worst.backs:
        back_from, back_to, line = worst.first_back  # type: ignore[misc]
        notes.append(Note("restart", f"steps go back from {back_from} to {back_to}" +
                          (f" (line {line})" if line else "") + f" in {name!r}: a resumed or re-run job; "
                          "the replayed steps keep their last logged value", line or None))
    if worst.dups:
        notes.append(Note("duplicate", f"{worst.dups} steps of {name!r} were logged more than once; "
                          "the last value of each was kept"))
    return notes


def infer_kind(series: Mapping[str, Series]) -> str:
    keys = set(series)
    if keys & {"reward_std", "frac_reward_zero_std", "completions/mean_length", "reward", "kl_loss"} and not \
            keys & {"rewards/chosen", "rewards/margins"}:
        return RL
    if keys & {"rewards/chosen", "rewards/margins", "rewards/accuracies", "logps/chosen", "odds_ratio_loss",
               "log_odds_ratio"}:
        return PREFERENCE
    if keys & {"mean_reward", "min_reward", "max_reward"} or ("accuracy" in keys and "margin" in keys):
        return REWARD_MODEL
    return SFT
