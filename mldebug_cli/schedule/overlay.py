"""A real run's logged LR (trainer_state.json ``log_history``) against the simulation.

When they disagree, each known mistake predicts what would have been logged at every logged
step; the explanation is the one that predicts every logged value (or the most of them):

* the scheduler stepped per micro-batch: step k logs f((k-1)·A) for accumulation A;
* stepped once per process (accelerate's prepared scheduler steps num_processes times): f((k-1)·P);
* logged one step off (transformers <= 4.50, torchtune log after stepping): f(k) instead of f(k-1);
* resumed with another config: the log follows the simulation up to a step, then another schedule;
* skipped fp16 steps (the scheduler does not step when the optimizer step is skipped): the log
  lags behind the simulation by a growing number of steps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.schedule.arithmetic import hf_warmup_steps
from mldebug_cli.schedule.formulas import ScheduleBuildError, builtin_lr_at
from mldebug_cli.schedule.model import EPOCH_LOOP_STEPS, RunSpec, Simulation

REL_TOL, ABS_TOL = 1e-6, 1e-12  # logged values may have gone through float32 (custom loops, torchtune)
MAX_STEPPING_FACTOR = 64  # the largest scheduler steps-per-optimizer-step searched for an unknown process count
MAX_REFIT_TOTALS = 20_000  # totals tried when refitting a resumed schedule without trainer_state's max_steps
MAX_LAG_JUMP = 128  # skipped steps between two logged steps searched (fp16 loss-scale searches skip a few dozen)


@dataclass(frozen=True)
class LoggedLR:
    step: int
    lr: float


@dataclass(frozen=True)
class Explanation:
    kind: str  # per-micro-batch | per-process | one-step-off | resumed | skipped-steps
    message: str
    matched: int
    total: int


@dataclass(frozen=True)
class Overlay:
    path: str
    logged: tuple[LoggedLR, ...]
    expected: tuple[float | None, ...]  # what the simulated run would log at each logged step
    mismatched: int
    first_mismatch: LoggedLR | None
    run_max_steps: int | None  # trainer_state.json's max_steps: the T of the run that wrote it
    explanation: Explanation | None = None

    def expected_at(self, step: int) -> float | None:
        for point, value in zip(self.logged, self.expected):
            if point.step == step:
                return value
        return None


def read_trainer_state(path: str) -> tuple[tuple[LoggedLR, ...], int | None]:
    """(logged LRs in step order, max_steps) from a trainer_state.json."""
    try:
        state = json.loads(read_text(path))
    except FileNotFoundError:
        raise InputError(f"{path}: trainer state file not found") from None
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not UTF-8, not JSON, a number too long
        raise InputError(f"{path}: cannot read the trainer state ({in_one_line(exc, 200)})") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{path}: no log_history list (is this a trainer_state.json?)")
    by_step: dict[int, float] = {}
    for entry in history:
        if not isinstance(entry, dict) or "step" not in entry:
            continue
        lr = entry.get("learning_rate", entry.get("lr"))
        if isinstance(lr, (int, float)) and not isinstance(lr, bool):
            by_step[int(entry["step"])] = float(lr)  # a resumed run re-logs steps: the last entry wins
    if not by_step:
        raise InputError(f"{path}: log_history has no learning_rate entries", hint="set logging_steps so LR is logged")
    max_steps = state.get("max_steps")
    return tuple(LoggedLR(s, by_step[s]) for s in sorted(by_step)), max_steps if isinstance(max_steps, int) else None


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def compare(sim: Simulation, path: str) -> Overlay:
    logged, run_max_steps = read_trainer_state(path)
    lr_at = _lr_function(sim.spec, sim.plan.warmup_steps, sim.plan.total_steps)
    offset = sim.spec.log_offset
    expected = tuple(_at(lr_at, p.step - 1 + offset) for p in logged)
    misses = [p for p, e in zip(logged, expected) if e is None or not close(p.lr, e)]
    overlay = Overlay(
        path=path,
        logged=logged,
        expected=expected,
        mismatched=len(misses),
        first_mismatch=misses[0] if misses else None,
        run_max_steps=run_max_steps,
    )
    if not misses or lr_at is None:
        return overlay
    return replace(overlay, explanation=explain(sim, logged, lr_at, run_max_steps))


def explain(sim: Simulation, logged: Sequence[LoggedLR], lr_at, run_max_steps: int | None) -> Explanation:
    """The listed mistake that predicts the most logged values (all of them, ideally)."""
    candidates = [
        _one_step_off(sim, logged, lr_at),
        *_faster_stepping(sim, logged, lr_at),
        _resumed(sim, logged, lr_at, run_max_steps),
        _skipped_steps(sim, logged, lr_at),
    ]
    found = [c for c in candidates if c is not None]
    complete = [c for c in found if c.matched == c.total]
    if complete:
        return complete[0]  # candidates are listed from the simplest explanation to the loosest fit
    best = max(found, key=lambda c: c.matched)
    return replace(best, message=f"closest fit ({best.matched} of {best.total} logged values): {best.message}")


def _lr_function(spec: RunSpec, warmup: int, total: int) -> Callable[[int], float] | None:
    try:
        return builtin_lr_at(spec.scheduler, spec.learning_rate, warmup, total)
    except ScheduleBuildError:
        return None


def _at(lr_at, index: int) -> float | None:
    if lr_at is None or index < 0:
        return None
    try:
        return float(lr_at(index))
    except (ZeroDivisionError, ValueError, OverflowError):
        return None


def _stepped(lr_at, factor: int, offset: int) -> Callable[[int], float | None]:
    """The LR of logged step k when the scheduler steps ``factor`` times per optimizer step, ``offset`` in."""
    return lambda k: _at(lr_at, (k - 1) * factor + offset)


def _count(logged: Sequence[LoggedLR], predict: Callable[[int], float | None]) -> int:
    matched = 0
    for point in logged:
        value = predict(point.step)
        matched += value is not None and close(point.lr, value)
    return matched


def _one_step_off(sim: Simulation, logged, lr_at) -> Explanation:
    other = 1 - sim.spec.log_offset
    matched = _count(logged, lambda k: _at(lr_at, k - 1 + other))
    which = (
        "the next step's LR, read after stepping the scheduler (as transformers <= 4.50 did)"
        if other else "the LR it ran with, while this framework logs the next step's"
    )
    return Explanation("one-step-off", f"logged one step off: step k logged {which}", matched, len(logged))


def _faster_stepping(sim: Simulation, logged, lr_at) -> list[Explanation]:
    accumulation, processes = sim.spec.grad_accum, sim.spec.world_size
    factors = [f for f in (accumulation, processes, accumulation * processes) if f > 1]
    factors += [f for f in range(2, MAX_STEPPING_FACTOR + 1) if f not in factors]
    found = []
    probe = logged[: min(len(logged), 8)]
    for factor in factors:
        # the scheduler may step before or after the optimizer inside each window: any offset 0..factor
        offsets = [o for o in range(factor + 1) if _count(probe, _stepped(lr_at, factor, o))]
        matched = max((_count(logged, _stepped(lr_at, factor, o)) for o in offsets), default=0)
        if matched:
            found.append(Explanation(*_stepping_story(factor, accumulation, processes), matched, len(logged)))
        if matched == len(logged):
            break
    return found


def _stepping_story(factor: int, accumulation: int, processes: int) -> tuple[str, str]:
    if factor == accumulation:
        return "per-micro-batch", (
            f"scheduler stepped per micro-batch: it advanced {factor} steps per optimizer step "
            f"(gradient_accumulation_steps {accumulation}), so the schedule ran {factor}x too fast"
        )
    if factor == accumulation * processes and accumulation > 1:
        return "per-micro-batch", (
            f"scheduler stepped per micro-batch on each of {processes} processes: "
            f"{factor} steps per optimizer step"
        )
    known = f" (world size {processes})" if factor == processes else f" (as on {factor} processes)"
    return "per-process", (
        f"scheduler stepped once per process{known}: accelerate's prepared scheduler steps num_processes times "
        f"per optimizer step, so the schedule ran {factor}x too fast; build it for T x num_processes steps"
    )


def _resumed(sim: Simulation, logged, lr_at, run_max_steps: int | None) -> Explanation | None:
    """The log follows the simulation up to a step, then a schedule built for another total."""
    offset = sim.spec.log_offset
    follows = [_at(lr_at, p.step - 1 + offset) for p in logged]
    prefix = 0
    while prefix < len(logged):
        predicted = follows[prefix]
        if predicted is None or not close(logged[prefix].lr, predicted):
            break
        prefix += 1
    if prefix == 0 or prefix == len(logged):
        return None
    resumed_at = logged[prefix].step
    suffix = logged[prefix:]
    fit = _refit_total(sim, suffix, run_max_steps)
    if fit is None:
        return Explanation(
            "resumed",
            f"the log follows the simulation up to step {logged[prefix - 1].step} and departs from step "
            f"{resumed_at}: consistent with resuming from a checkpoint with another config",
            prefix,
            len(logged),
        )
    total, warmup, base_lr = fit
    changed = [f"{total} total steps (simulated {sim.plan.total_steps})"]
    if warmup != sim.plan.warmup_steps:
        changed.append(f"warmup {warmup}")
    if not close(base_lr, sim.spec.learning_rate):
        changed.append(f"learning rate {base_lr:g}")
    return Explanation(
        "resumed",
        f"resumed with another config: the log follows the simulation up to step {logged[prefix - 1].step}, "
        f"then a schedule built for {', '.join(changed)}",
        len(logged),
        len(logged),
    )


def _refit_total(sim: Simulation, suffix, run_max_steps: int | None) -> tuple[int, int, float] | None:
    """(T', W', LR') of the same scheduler that predicts every logged value after the resume."""
    spec, offset = sim.spec, sim.spec.log_offset
    # the resumed run reached its last logged step, so its total is at least that
    first_total = suffix[-1].step
    last_total = min(4 * max(sim.plan.total_steps, first_total), first_total + MAX_REFIT_TOTALS)
    totals = [run_max_steps] if run_max_steps else []
    totals += [t for t in range(first_total, last_total + 1) if t != run_max_steps]
    for total in totals:
        for warmup in _warmup_candidates(spec, sim.plan.warmup_steps, total):
            lr_at = _lr_function(spec, warmup, total)
            first = _at(lr_at, suffix[0].step - 1 + offset)
            if not first:
                continue
            scale = suffix[0].lr / first  # another learning_rate scales the whole curve
            if all((v := _at(lr_at, p.step - 1 + offset)) is not None and close(p.lr, v * scale) for p in suffix):
                return total, warmup, spec.learning_rate * scale
    return None


def _warmup_candidates(spec: RunSpec, simulated: int, total: int) -> list[int]:
    counting = spec.counting  # a framework that derives warmup from its own total step count says how
    rule = counting.warmup_steps(spec, total) if counting.warmup_steps is not None else None
    recomputed = hf_warmup_steps(replace(spec, warmup_steps=rule), total) if rule is not None else (
        hf_warmup_steps(spec, total) if counting.kind != EPOCH_LOOP_STEPS else simulated)
    return list(dict.fromkeys((recomputed, simulated)))


def _skipped_steps(sim: Simulation, logged, lr_at) -> Explanation | None:
    """Each logged value is an earlier step's LR, and the lag never shrinks: skipped optimizer steps."""
    offset, lag, matched = sim.spec.log_offset, 0, 0
    for point in logged:
        index = point.step - 1 + offset
        lags = range(lag, min(index, lag + MAX_LAG_JUMP) + 1)
        found = next((d for d in lags if _matches(lr_at, index - d, point.lr)), None)
        if found is None:
            continue
        lag, matched = found, matched + 1
    if lag == 0:
        return None
    return Explanation(
        "skipped-steps",
        f"skipped fp16 steps: the logged LR lags the simulation by {lag} step{'s' if lag != 1 else ''} by step "
        f"{logged[-1].step} ({lag} optimizer step{'s' if lag != 1 else ''} skipped); when the loss scaler skips "
        "an optimizer step (inf/NaN gradients) the scheduler does not step, so the whole schedule shifts later",
        matched,
        len(logged),
    )


def _matches(lr_at, index: int, value: float) -> bool:
    expected = _at(lr_at, index)
    return expected is not None and close(value, expected)
