"""What the run checks share: the context (thresholds, vocabulary, the run's config), warmup, hits."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.findings import Hit, Location, Severity
from mldebug_cli.sources.runlog.model import Run, Series

WARMUP_SHARE_WITHOUT_LR = 0.1  # no LR logged: treat the first 10 % of steps as warmup (axolotl's guide: 5-10 %)


@dataclass(frozen=True)
class RunConfig:
    """What the run's training config says that changes a verdict (``--config``)."""

    path: str
    values: Mapping[str, Any] = field(default_factory=dict)  # gradient_accumulation_steps, max_completion_length...
    lines: Mapping[str, int] = field(default_factory=dict)

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        return f"`{key}` ({self.path}" + (f" line {line})" if line else ")")


@dataclass(frozen=True)
class MemoryEstimate:
    """mldebug memory's peak for the run's config (``--config``), per GPU, in bytes: what PyTorch allocates and what
    its allocator reserves (``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` are its logged views)."""

    allocated: int
    reserved: int
    largest_term: str  # the term that dominates the estimate
    config: str


# the logged peak, reserved first (what the allocator holds), then allocated; axolotl's names, the guide's, then
# torchtune's (training/memory.py get_memory_stats: max_memory_reserved / max_memory_allocated over 1024**3 from
# 0.3.0 on, in the 0.3.0, 0.3.1, 0.4.0, 0.5.0 and 0.6.1 wheels; 0.2.1 divided by 1e9), in GiB
MEMORY_KEYS = ("memory/device_reserved (GiB)", "memory/max_reserved", "peak_memory_reserved",
               "memory/max_allocated (GiB)", "memory/max_alloc", "peak_memory_alloc")
TORCHTUNE_MEMORY_KEYS = ("peak_memory_reserved", "peak_memory_alloc")


def unit_note(key: str) -> str:
    """What a reader of the message should know of the logged unit: torchtune's 0.2 releases logged GB."""
    if key in TORCHTUNE_MEMORY_KEYS:
        return " (GiB, as torchtune 0.3.0 and later log it; 0.2.x logged GB of 1e9 bytes, 7% fewer bytes)"
    return ""


def logged_peak(run: Run) -> tuple[Series, int] | None:
    """(series, index of its highest finite point) of the first memory metric the run logged, else None."""
    for key in MEMORY_KEYS:
        series = run.get(key)
        points = [(v, -i) for i, v in enumerate(series.values) if v == v and v != float("inf")] if series else []
        if series is not None and points:
            return series, -max(points)[1]  # the first step that reached the peak
    return None


def is_reserved(key: str) -> bool:
    """Whether a logged memory metric is the allocator's reserved memory (else the allocated peak)."""
    return "reserved" in key


@dataclass(frozen=True)
class RunContext:
    limits: Mapping[str, float] = field(default_factory=dict)  # this check's thresholds (defaults + mldebug.toml)
    vocab_size: int | None = None
    config: RunConfig | None = None
    gpu: tuple[str, float] | None = None  # (name, GiB per GPU as PyTorch sees it): --gpu / --gpu-memory
    memory_estimate: MemoryEstimate | None = None  # mldebug memory's peak for --config (RN051)

    def limit(self, name: str) -> float:
        return self.limits[name]

    def config_value(self, key: str) -> Any:
        return None if self.config is None else self.config.values.get(key)

    def config_key(self, key: str, fallback: str | None = None) -> str:
        """``warmup_steps`` ("config.yaml line 12") when the config holds it, else the plain key name."""
        if self.config is not None and key in self.config.values:
            return self.config.where(key)
        return f"`{fallback or key}`"


def hit(run: Run, series: Series, first: int, last: int | None, message: str, hint: str,
        severity: Severity | None = None) -> Hit:
    """A finding on ``series`` from index ``first`` to ``last`` (inclusive) of its points."""
    last = first if last is None else last
    location = Location(path=run.path, line=series.line(first), key=run.original_keys.get(series.key, series.key),
                        step=series.steps[first], step_end=series.steps[last] if last != first else None)
    return Hit(message=message, hint=hint, location=location, severity=severity)


def run_hit(run: Run, message: str, hint: str, step: int | None = None, severity: Severity | None = None,
            line: int | None = None) -> Hit:
    return Hit(message=message, hint=hint, severity=severity,
               location=Location(path=run.path, step=step, line=line))


def warmup_end_step(run: Run) -> int:
    """The step where the logged LR first reaches its peak (0 when it starts there), else 10 % of the run."""
    lr = run.get("learning_rate")
    if lr is not None:
        values = lr.values
        peak = max((v for v in values if math.isfinite(v)), default=None)
        if peak is not None:
            start = next(i for i, v in enumerate(values) if math.isfinite(v))
            first = next(lr.steps[i] for i, v in enumerate(values) if math.isfinite(v) and v >= peak * 0.99)
            return first if first > lr.steps[start] else 0
    last = run.last_step or 0
    return int(last * WARMUP_SHARE_WITHOUT_LR)


def after(series: Series, step: int) -> int:
    """Index of the first point at or after ``step``."""
    from bisect import bisect_left

    return bisect_left(series.steps, step)


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else math.nan


def fmt(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
        return f"{value:.3g}"
    return f"{value:.4g}"


def runs_where(series: Series, predicate, start: int = 0) -> list[tuple[int, int]]:
    """Index ranges [first, last] of consecutive points whose value satisfies ``predicate``."""
    out: list[tuple[int, int]] = []
    begin = None
    values = series.values
    for i in range(start, len(values)):
        if predicate(values[i]):
            if begin is None:
                begin = i
        elif begin is not None:
            out.append((begin, i - 1))
            begin = None
    if begin is not None:
        out.append((begin, len(values) - 1))
    return out


def is_rl(run: Run) -> bool:
    from mldebug_cli.sources.runlog.model import RL

    return run.kind == RL


def spikes(series: Series, window: int, min_window: int, sigma: float, ratio: float, start: int = 0,
           positive_only: bool = True) -> list[tuple[int, float, float]]:
    """(index, value, window mean) of points above mean + sigma·σ of the previous ``window`` finite points.

    The σ rule is OLMo-core's StabilityMonitor (6σ over 128, σ > 1e-10); a point must also be ``ratio`` × the
    window mean (llm-foundry's KillLossSpike factor) so that tiny-σ stretches do not flag ordinary noise.
    Running sums keep it O(n) for a million points.
    """
    from collections import deque

    recent: deque[float] = deque()
    total = squares = 0.0
    found: list[tuple[int, float, float]] = []
    values = series.values
    for i in range(len(values)):
        value = values[i]
        if not math.isfinite(value):
            continue
        if i >= start and len(recent) >= min_window:
            n = len(recent)
            mu = total / n
            var = max(squares / n - mu * mu, 0.0)
            sd = math.sqrt(var)
            big = value - mu if positive_only else abs(value - mu)
            if sd > 1e-10 and big > sigma * sd and abs(value) >= ratio * abs(mu):
                found.append((i, value, mu))
        recent.append(value)
        total += value
        squares += value * value
        if len(recent) > window:
            old = recent.popleft()
            total -= old
            squares -= old * old
    return found


def cluster(points: list[tuple[int, float, float]], gap: int = 3) -> list[list[tuple[int, float, float]]]:
    """Spike points grouped when fewer than ``gap`` points apart."""
    groups: list[list[tuple[int, float, float]]] = []
    for point in points:
        if groups and point[0] - groups[-1][-1][0] <= gap:
            groups[-1].append(point)
        else:
            groups.append([point])
    return groups


def last_finite_at(series: Series, step: int) -> float | None:
    """The last finite value logged at or before ``step``."""
    from bisect import bisect_right

    i = bisect_right(series.steps, step) - 1
    while i >= 0 and not math.isfinite(series.values[i]):
        i -= 1
    return series.values[i] if i >= 0 else None


def train_eval_pairs(run: Run) -> list[tuple[int, float, float]]:
    """(eval index, train loss, eval loss) at each finite eval point that has a train loss at or before it."""
    evals, loss = run.get("eval_loss"), run.get("loss")
    if evals is None or loss is None:
        return []
    pairs = []
    for i, (step, value) in enumerate(zip(evals.steps, evals.values)):
        train = last_finite_at(loss, step)
        if train is not None and math.isfinite(value) and value > 0 and train > 0:
            pairs.append((i, train, value))
    return pairs


def accumulation_pattern(pairs: list[tuple[int, float, float]], accumulation: Any, tolerance: float,
                         share: float, min_evals: float) -> tuple[int, list[int]] | None:
    """(factor, indices into ``pairs``) when train/eval is about the accumulation steps at most evaluations.

    With ``accumulation`` unknown the factor is the power of two nearest the median ratio (from 2 up).
    """
    if len(pairs) < min_evals:
        return None
    ratios = [train / value for _i, train, value in pairs]
    if isinstance(accumulation, int) and accumulation >= 2:
        factor = accumulation
    else:
        median = sorted(ratios)[len(ratios) // 2]
        if median < 1.5:
            return None
        factor = 2 ** round(math.log2(median))
    near = [k for k, r in enumerate(ratios) if abs(r - factor) <= tolerance * factor]
    return (factor, near) if len(near) >= max(min_evals, share * len(ratios)) else None


def points_where(series: Series, test, start: int = 0) -> array:
    """Indices (from ``start``) of the finite logged values that pass ``test``, as a compact array."""
    values = series.values
    return array("q", (i for i in range(start, len(values)) if math.isfinite(values[i]) and test(values[i])))


def share(indices, series: Series) -> str:
    """``at 3 of 40 logged points``."""
    return f"at {len(indices)} of {len(series)} logged points"
