"""The LR at every optimizer step: from the real scheduler when torch is there, else the built-in formulas.

The real engine builds the framework's own scheduler (what its SchedulerFamily's ``real`` gives) on a
one-parameter optimizer and steps it once per optimizer step, reading the LR the way the framework logs it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from mldebug_cli.schedule.formulas import ScheduleBuildError, builtin_lr_at
from mldebug_cli.schedule.model import RealScheduler, SchedulerChoice

BUILTIN_ENGINE = "built-in formulas"
MAX_SCHEDULE_STEPS = 100_000  # steps simulated one by one; past this the curve is computed at chosen steps
SAMPLED_POINTS = 10_000  # evenly spaced steps of a longer curve (besides its start, warmup end and last steps)
EDGE_STEPS = 1_000  # steps kept one by one at the start, around the warmup's end and at the end
ENGINE_CHOICES = ("auto", "builtin")
REAL_ENGINE = "real"  # simulate_lrs only (the tests that hold the formulas equal to it): the real scheduler, always


@dataclass(frozen=True)
class EngineResult:
    lrs: tuple[float, ...]
    engine: str
    error: str | None = None  # what the scheduler raises: the run stops there
    fails_after: int | None = None  # optimizer steps done when it raises (0: while building it)


def simulate_lrs(
    choice: SchedulerChoice, base_lr: float, warmup: int, total: int, count: int, engine: str = "auto"
) -> EngineResult:
    """LRs of optimizer steps 1..count for a scheduler built with ``warmup`` and ``total`` steps.

    ``auto`` computes with the built-in formula, under the real scheduler's name, where the family holds the two equal
    for this choice at the installed release (``SchedulerFamily.exact``): the same floats without importing torch.
    A formula that raises hands over to the real scheduler, whose own error the report quotes."""
    exact = choice.family.exact(choice) if engine == "auto" and choice.family.exact is not None else None
    if exact is not None:
        result = _run_builtin(choice, base_lr, warmup, total, count)
        if result.error is None:
            return EngineResult(result.lrs, exact)
    real = None if engine == "builtin" or choice.family.real is None else choice.family.real(choice)
    if real is None:
        return _run_builtin(choice, base_lr, warmup, total, count)
    return _run_real(real, choice, base_lr, warmup, total, count)


def sampled_steps(warmup: int, count: int) -> list[int]:
    """The optimizer steps (1-based) a curve of ``count`` steps is computed at when it is too long to compute at
    each: every step where schedules change shape (the start, around warmup's end, the end) and an even grid."""
    chosen = set(range(1, min(count, EDGE_STEPS) + 1))
    chosen.update(range(max(1, warmup - EDGE_STEPS), min(count, warmup + EDGE_STEPS) + 1))
    chosen.update(range(max(1, count - EDGE_STEPS + 1), count + 1))
    chosen.update(1 + (count - 1) * i // SAMPLED_POINTS for i in range(SAMPLED_POINTS + 1))
    return sorted(chosen)


def simulate_sampled(choice: SchedulerChoice, base_lr: float, warmup: int, total: int,
                     steps: list[int]) -> EngineResult:
    """LRs at ``steps`` (1-based) from the built-in formulas, which give any step's LR directly (the real
    schedulers can only be stepped one step at a time)."""
    try:
        lr_at = builtin_lr_at(choice, base_lr, warmup, total)
    except ScheduleBuildError as exc:
        return EngineResult((), BUILTIN_ENGINE, error=str(exc), fails_after=0)
    lrs: list[float] = []
    try:
        for step in steps:
            lrs.append(float(lr_at(step - 1)))
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        return EngineResult(tuple(lrs), BUILTIN_ENGINE, error=_failure(exc), fails_after=steps[len(lrs)] - 1)
    return EngineResult(tuple(lrs), BUILTIN_ENGINE)


def torch_importable() -> bool:
    """Whether torch imports: the frameworks' own schedulers run on it (pip install 'mldebug[schedule]')."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def _run_builtin(choice: SchedulerChoice, base_lr: float, warmup: int, total: int, count: int) -> EngineResult:
    try:
        lr_at = builtin_lr_at(choice, base_lr, warmup, total)
    except ScheduleBuildError as exc:
        return EngineResult((), BUILTIN_ENGINE, error=str(exc), fails_after=0)
    lrs: list[float] = []
    try:
        for index in range(count + 1):  # the loop steps the scheduler once more after the last optimizer step
            lr = float(lr_at(index))
            if index < count:
                lrs.append(lr)
    except (ZeroDivisionError, OverflowError, ValueError) as exc:
        return EngineResult(tuple(lrs), BUILTIN_ENGINE, error=_failure(exc), fails_after=len(lrs))
    return EngineResult(tuple(lrs), BUILTIN_ENGINE)


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _run_real(real: RealScheduler, choice, base_lr: float, warmup: int, total: int, count: int) -> EngineResult:
    import torch

    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=base_lr)
    lrs: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": no training here
        try:
            scheduler = real.build(optimizer, choice, warmup, total)
        except (ValueError, TypeError, ZeroDivisionError) as exc:  # what the framework raises for a bad config
            return EngineResult((), real.engine, error=_failure(exc), fails_after=0)
        steps_scheduler = real.steps(scheduler)
        try:
            for _ in range(count):
                lr = real.read_lr(scheduler, optimizer)
                lrs.append(float(lr.item() if torch.is_tensor(lr) else lr))
                if steps_scheduler:
                    scheduler.step()
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:  # TypeError: a kwarg of a wrong type
            return EngineResult(tuple(lrs), real.engine, error=_failure(exc), fails_after=len(lrs))
    return EngineResult(tuple(lrs), real.engine)
