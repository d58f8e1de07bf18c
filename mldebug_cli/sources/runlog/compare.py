"""Two runs' curves on one axis (`check-run RUN --compare OTHER`): the subject of RN049 and RN050.

The axis is the optimizer step, or the tokens seen (``--align tokens``: the ``num_input_tokens_seen`` the HF Trainer
logs with ``include_num_input_tokens_seen``, or TRL's ``num_tokens``), so that runs with other batch sizes or packing
compare over the same data, or the wall-clock time since each run's first logged step (``--align time``: the time
W&B stamps on each history row, TensorBoard on each event, MLflow on each point, LLaMA-Factory's ``elapsed_time``;
a trainer_state.json has none), so
that a faster setup is judged on what it reaches in the same hours, or the samples seen (``--align samples``: the
fractional ``epoch`` the HF Trainer, TRL and LLaMA-Factory log with each record, the share of the training set seen),
so that runs over the same dataset with another batch size, accumulation or process count compare after the same
rows. Each compared metric is read at the first run's points; the other run's value there is
interpolated linearly between its own two nearest points, inside the span both runs cover (never extrapolated).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

from mldebug_cli.core.errors import UsageError
from mldebug_cli.sources.runlog.model import Run, Series

AXES = ("step", "tokens", "time", "samples")
EPOCH_SERIES = ("epoch",)  # the fraction of the training set seen (samples seen / its rows)
# the logs whose readers keep each step's wall-clock time
TIMED_FORMATS = "W&B, TensorBoard and MLflow logs and LLaMA-Factory's trainer_log.jsonl"
TOKEN_SERIES = ("num_input_tokens_seen", "num_tokens")  # the HF Trainer's, TRL's
METRICS = ("loss", "eval_loss", "grad_norm", "learning_rate")


@dataclass(frozen=True)
class Aligned:
    """One metric of both runs at the first run's points: (x, first run's value, other run's value)."""

    metric: str
    points: tuple[tuple[float, float, float], ...]


@dataclass(frozen=True)
class RunComparison:
    first: str  # the runs' paths
    other: str
    axis: str  # step | tokens | time (seconds since each run's first logged step) | samples (epochs of the data seen)
    metrics: tuple[Aligned, ...]
    first_eval: tuple[float, ...] = ()  # each run's own eval losses, in order (the noise of the eval difference)
    other_eval: tuple[float, ...] = ()

    def where(self, x: float) -> str:
        """A point of the axis as the messages name it: "step 120", "tokens 1,200,000", "1,830 s", "epoch 0.50"."""
        if self.axis == "samples":
            return f"epoch {x:,.2f}"
        return f"{x:,.0f} s" if self.axis == "time" else f"{self.axis} {x:,.0f}"


def compare(first: Run, other: Run, axis: str = "step") -> RunComparison:
    if axis not in AXES:
        raise UsageError(f"--align: unknown axis {axis!r}", hint=f"one of {', '.join(AXES)}")
    first_x, other_x = _axis(first, axis), _axis(other, axis)
    metrics = []
    for name in METRICS:
        a, b = first.get(name), other.get(name)
        if a is None or b is None:
            continue
        ours = _points(a, first_x)
        theirs = _points(b, other_x)
        aligned = tuple((x, y, v) for x, y in ours if (v := _interpolate(theirs, x)) is not None)
        if aligned:
            metrics.append(Aligned(name, aligned))
    if not metrics:
        raise UsageError(f"{first.path} and {other.path} share no metric over a common {axis} span",
                         hint="compare runs that log loss, eval_loss, grad_norm or learning_rate over the same steps")
    return RunComparison(first.path, other.path, axis, tuple(metrics), _evals(first), _evals(other))


def _axis(run: Run, axis: str) -> Series | Mapping[int, float] | None:
    if axis == "step":
        return None
    if axis == "time":
        if len(run.times) < 2:
            raise UsageError(f"--align time: {run.path} ({run.format}) records no wall-clock time per step",
                             hint=f"{TIMED_FORMATS} carry it; compare by step or tokens")
        start = min(run.times.values())
        return {step: seconds - start for step, seconds in run.times.items()}
    if axis == "samples":
        epochs = next((run.get(name) for name in EPOCH_SERIES if run.get(name) is not None), None)
        if epochs is None:
            raise UsageError(f"--align samples: {run.path} logs no epoch (the share of the training set seen)",
                             hint="the HF Trainer, TRL and LLaMA-Factory log it with each record; compare by step or tokens")
        return epochs
    found = next((run.get(name) for name in TOKEN_SERIES if run.get(name) is not None), None)
    if found is None:
        raise UsageError(f"--align tokens: {run.path} logs no tokens seen ({' or '.join(TOKEN_SERIES)})",
                         hint="log them (HF Trainer: include_num_input_tokens_seen: true; TRL logs num_tokens), "
                              "or compare by step")
    return found


def _points(series: Series, axis: Series | Mapping[int, float] | None) -> list[tuple[float, float]]:
    """(x, value) for the finite values, x the step, the tokens seen or the seconds elapsed at that step, in
    increasing x (a step without a time is left out)."""
    out = []
    for step, value in zip(series.steps, series.values):
        x = float(step) if axis is None else axis.get(step) if isinstance(axis, Mapping) else axis.value_at(step)
        if x is not None and math.isfinite(value) and math.isfinite(x):
            out.append((float(x), float(value)))
    out.sort()
    return out


def _interpolate(points: list[tuple[float, float]], x: float) -> float | None:
    if not points or not points[0][0] <= x <= points[-1][0]:
        return None
    i = bisect_left(points, (x, -math.inf))
    if points[i][0] == x:
        return points[i][1]
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def _evals(run: Run) -> tuple[float, ...]:
    series = run.get("eval_loss")
    return () if series is None else tuple(v for v in series.values if math.isfinite(v))
