"""The metric model: one series per metric with names normalised across frameworks, in optimizer steps.

Key names follow HF Trainer/TRL's ``log_history`` (``loss``, ``eval_loss``, ``grad_norm``,
``learning_rate``, ``reward``, ``rewards/margins``, ``logps/chosen``...). Mirrors are renamed:
TensorBoard/W&B's ``train/x`` -> ``x`` and ``eval/x`` -> ``eval_x``; LLaMA-Factory's ``lr`` ->
``learning_rate`` and ``accuracy`` -> ``rewards/accuracies``; torchtune's ``log_probs/*`` -> ``logps/*``,
``val_loss`` -> ``eval_loss``, ``rewards`` -> ``reward``, PPO/GRPO's ``response_lengths`` ->
``completions/mean_length`` and ``clipfrac`` -> ``clip_ratio/region_mean``; TRL <= 0.16's ``completion_length`` ->
``completions/mean_length`` (when the run does not log both). Rows are stored by columns (one
shared step and line array, one ``array('d')`` per metric) so a million-step log stays small; steps logged
twice keep the last write (a resume replays steps).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from mldebug_cli.sources.runlog.records import LogSink, Note
from mldebug_cli.sources.runlog.registry import renames

SFT, PREFERENCE, RL, REWARD_MODEL = "sft", "preference", "rl", "reward-model"
RENAMES = {"lr": "learning_rate", "val_loss": "eval_loss", "rewards": "reward", "train_loss_step": "loss",
           "response_lengths": "completions/mean_length", "clipfrac": "clip_ratio/region_mean"}
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
    return renames(fmt).get(key) or RENAMES.get(key, key)  # a format's own renames: its registry line


class Column:
    """One metric's values as logged, with the rows they came from (``rows`` stays None while the metric
    was in every row so far: then value i belongs to row i and no index is stored). A metric logged on
    its own (MLflow keeps one file per metric) has its own ``steps`` instead of rows."""

    __slots__ = ("values", "rows", "steps")

    def __init__(self, own_steps: bool = False) -> None:
        self.values = array("d")
        self.rows: array | None = None
        self.steps: Axis | None = Axis("q") if own_steps else None

    def index(self) -> array | range:
        return range(len(self.values)) if self.rows is None else self.rows


@dataclass(frozen=True)
class Series:
    key: str
    steps: array | range | Repeated  # a range when the steps are evenly spaced
    values: array
    lines: array | range | Repeated  # 1-based line in the log, 0 when unknown (Repeated: none known)

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
    times: Mapping[int, float] = field(default_factory=dict)  # step -> wall-clock seconds, where the log records them

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


_SUMMARY = object()  # a signature whose rows are the final summary entry


class Axis:
    """An integer column (steps, lines) kept as a ``range`` while it is arithmetic, as most logs' steps
    and lines are (every ``logging_steps``, one line per row): then a million rows cost no memory here.
    The first value that breaks the pattern turns it into an array."""

    __slots__ = ("first", "stride", "count", "values", "typecode")

    def __init__(self, typecode: str) -> None:
        self.typecode = typecode
        self.first = self.stride = self.count = 0
        self.values: array | None = None

    def append(self, value: int) -> None:
        if self.values is not None:
            self.values.append(value)
        elif self.count == 0:
            self.first = value
        elif self.count == 1 and value >= self.first:
            self.stride = value - self.first  # 0: a constant column (lines of a log that has none)
        elif self.count == 1 or value != self.first + self.count * self.stride:
            self.values = array(self.typecode, self.view())
            self.values.append(value)
        self.count += 1

    def __len__(self) -> int:
        return self.count

    def view(self) -> array | range | Repeated:
        """The column so far, as a sequence (a range, a repeated value, or the array itself)."""
        if self.values is not None:
            return self.values
        if self.stride == 0 and self.count > 1:
            return Repeated(self.first, self.count)
        return range(self.first, self.first + self.count * (self.stride or 1), self.stride or 1)


class Repeated(Sequence):
    """One value ``count`` times: the line column of a log without line numbers."""

    __slots__ = ("value", "times")  # (not `count`: Sequence.count is a method)

    def __init__(self, value: int, count: int) -> None:
        self.value, self.times = value, count

    def __len__(self) -> int:
        return self.times

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Repeated(self.value, len(range(self.times)[index]))
        if not -self.times <= index < self.times:
            raise IndexError(index)
        return self.value


class RowStore:
    """The sink's row handler, columnar: one shared step and line per row, one value column per metric.

    A million rows of three metrics take 8 + 4 bytes per row plus 8 per value. Each distinct set of keys
    (a row's signature: train, eval, final entry...) is renamed once and remembered as a plan.
    """

    def __init__(self, fmt: str) -> None:
        self.fmt = fmt
        self.steps = Axis("q")
        self.lines = Axis("I")
        self.columns: dict[str, Column] = {}
        self.names: dict[str, str] = {}  # canonical -> as logged
        self.summary: dict[str, float] = {}
        self.plans: dict[tuple, object] = {}
        self.point_columns: dict[str, Column] = {}  # key as logged -> its own column (add_point)
        self.counter = 0
        self.unstepped = 0

    def add(self, step: int | None, values: dict[str, float], line: int | None = None) -> None:
        signature = tuple(values)
        plan = self.plans.get(signature)
        if plan is None:
            plan = self.plans[signature] = self._plan(signature)
        if plan is _SUMMARY:
            self.summary.update({canonical(k, self.fmt): v for k, v in values.items()})
            return
        self.counter += 1
        if step is None:
            self.unstepped += 1
            step = self.counter
        row = len(self.steps)
        self.steps.append(step)
        self.lines.append(line if line and 0 < line < 1 << 32 else 0)
        for key, column in plan:  # type: ignore[attr-defined]
            column_values = column.values
            if column.rows is None:
                if len(column_values) == row:
                    column_values.append(values[key])
                    continue
                column.rows = array("I", range(len(column_values)))
            column.rows.append(row)
            column_values.append(values[key])

    def add_point(self, key: str, step: int, value: float) -> None:
        """One point of a metric logged on its own (no rows shared with other metrics, no line)."""
        column = self.point_columns.get(key)
        if column is None:
            name = canonical(key, self.fmt)
            self.names.setdefault(name, key)
            column = self.point_columns[key] = self.columns[name] = Column(own_steps=True)
        column.steps.append(step)  # type: ignore[union-attr]
        column.values.append(value)

    def _plan(self, signature: tuple) -> object:
        if "train_runtime" in signature or "train/train_runtime" in signature:
            return _SUMMARY
        chosen: dict[str, str] = {}  # canonical name -> the key that fills it (the last one logged)
        for key in signature:
            name = canonical(key, self.fmt)
            if name in SUMMARY_KEYS:
                continue
            if key == "completion_length" and "completions/mean_length" not in signature:
                name = "completions/mean_length"  # TRL <= 0.16; Unsloth logs both (then both are kept)
            chosen[name] = key
        plan = []
        for name, key in chosen.items():
            self.names.setdefault(name, key)
            column = self.columns.get(name)
            if column is None:
                column = self.columns[name] = Column()
            plan.append((key, column))
        return tuple(plan)

    def series(self, name: str, copy: bool = False) -> tuple[Series, Disorder]:
        """The metric's series in step order (a step logged twice keeps its last write) and what was repaired."""
        column = self.columns[name]
        index = column.index()
        lines_of: array | range | Repeated
        if column.steps is not None:
            steps_of, lines_of = column.steps.view(), Repeated(0, len(column.steps))
        else:
            steps_of, lines_of = self.steps.view(), self.lines.view()
        if column.rows is None:  # value i is row i: share the rows' columns unless the store keeps growing
            whole = len(index) == len(steps_of)
            steps = steps_of if whole and not copy else _copy(steps_of[:len(index)])
            lines = lines_of if whole and not copy else _copy(lines_of[:len(index)])
        else:
            steps = array("q", (steps_of[i] for i in index))
            lines = array("I", (lines_of[i] for i in index))
        disorder = Disorder.of(steps, lines_of, index)
        if disorder.ordered:
            return Series(name, steps, array("d", column.values) if copy else column.values, lines), disorder
        order = sorted(range(len(steps)), key=steps.__getitem__)  # stable: later writes stay later
        out_steps, out_values, out_lines = array("q"), array("d"), array("I")
        values = column.values
        for k in order:
            step = steps[k]
            if out_steps and out_steps[-1] == step:
                out_values[-1], out_lines[-1] = values[k], lines_of[index[k]]
            else:
                out_steps.append(step)
                out_values.append(values[k])
                out_lines.append(lines_of[index[k]])
        return Series(name, out_steps, out_values, out_lines), disorder


def _copy(column):
    return array(column.typecode, column) if isinstance(column, array) else column  # ranges are immutable


@dataclass(frozen=True)
class Disorder:
    """How a metric's logged steps left order: repeats, steps going back, the first go-back."""

    backs: int = 0
    dups: int = 0
    first_back: tuple[int, int, int] | None = None  # (from step, to step, line)

    @property
    def ordered(self) -> bool:
        return not (self.backs or self.dups)

    @classmethod
    def of(cls, steps: array | range | Repeated, lines: array | range | Repeated, index) -> Disorder:
        if isinstance(steps, range) and steps.step > 0 or all(a < b for a, b in zip(steps, islice(steps, 1, None))):
            return cls()
        backs = dups = 0
        first_back = None
        previous = steps[0]
        for k in range(1, len(steps)):
            step = steps[k]
            if step == previous:
                dups += 1
            elif step < previous:
                backs += 1
                if first_back is None:
                    first_back = (previous, step, lines[index[k]])
            previous = step
        return cls(backs, dups, first_back)


def build_run(path: Path, fmt: str, fill: Callable[[LogSink], None]) -> Run:
    store = RowStore(fmt)
    sink = LogSink(store)
    fill(sink)
    return finish(path, fmt, store, sink)


def finish(path: Path, fmt: str, store: RowStore, sink: LogSink, copy: bool = False) -> Run:
    """The Run of what ``store`` and ``sink`` hold (``copy``: the store keeps growing, as under ``--watch``)."""
    built = {name: store.series(name, copy) for name in store.columns}
    series = {name: s for name, (s, _d) in built.items()}
    notes = list(sink.notes) + _order_notes({name: d for name, (_s, d) in built.items()})
    if store.unstepped:
        notes.append(Note("no-step", f"{store.unstepped} logged rows had no step; numbered by position"))
    meta = dict(sink.meta)
    meta.update({f"final_{k}" if not k.startswith("train_") else k: v for k, v in store.summary.items()})
    return Run(str(path), fmt, infer_kind(series), series, tuple(notes), meta, dict(store.names), dict(sink.times))


def _order_notes(disorders: Mapping[str, Disorder]) -> list[Note]:
    """One note for the worst disorder among the series (they share the rows, so one speaks for all)."""
    # epoch is in the train and the eval entry of the same step: not a duplicate
    ranked = sorted(((k, d) for k, d in disorders.items() if k != "epoch"), key=lambda kv: (kv[1].backs, kv[1].dups),
                    reverse=True)
    if not ranked:
        return []
    name, worst = ranked[0]
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
