"""The LR at every optimizer step: from the real scheduler when torch is there, else the built-in formulas.

The real engine builds the framework's own scheduler on a one-parameter optimizer and steps it
once per optimizer step, reading the LR the way the framework logs it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

from mldebug_cli.schedule.formulas import ScheduleBuildError, builtin_lr_at
from mldebug_cli.schedule.model import AXOLOTL_FAMILY, HF_FAMILY, SchedulerChoice

BUILTIN_ENGINE = "built-in formulas"
MAX_SCHEDULE_STEPS = 100_000  # steps simulated one by one; past this the curve is computed at chosen steps
SAMPLED_POINTS = 10_000  # evenly spaced steps of a longer curve (besides its start, warmup end and last steps)
EDGE_STEPS = 1_000  # steps kept one by one at the start, around the warmup's end and at the end
ENGINE_CHOICES = ("auto", "builtin")


@dataclass(frozen=True)
class EngineResult:
    lrs: tuple[float, ...]
    engine: str
    error: str | None = None  # what the scheduler raises: the run stops there
    fails_after: int | None = None  # optimizer steps done when it raises (0: while building it)


def simulate_lrs(
    choice: SchedulerChoice, base_lr: float, warmup: int, total: int, count: int, engine: str = "auto"
) -> EngineResult:
    """LRs of optimizer steps 1..count for a scheduler built with ``warmup`` and ``total`` steps."""
    real = None if engine == "builtin" else _real_builder(choice)
    if real is None:
        return _run_builtin(choice, base_lr, warmup, total, count)
    label, build, read_lr = real
    return _run_real(label, build, read_lr, choice, base_lr, warmup, total, count)


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


def real_engine_version() -> str | None:
    """``transformers x.y`` when transformers and torch import, else None."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError:
        return None
    return f"transformers {transformers.__version__}"


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


def _real_builder(choice: SchedulerChoice):
    """(engine label, build(optimizer, ...), read_lr) for schedulers whose real code is importable."""
    if choice.family == HF_FAMILY:
        version = real_engine_version()
        return None if version is None else (version, _build_hf, _read_hf_lr)
    if choice.family == AXOLOTL_FAMILY and choice.name == "one_cycle":
        try:
            import torch
        except ImportError:
            return None
        return f"torch {torch.__version__} OneCycleLR", _build_one_cycle, _read_last_lr
    return None


def _build_hf(optimizer, choice: SchedulerChoice, warmup: int, total: int):
    from transformers import get_scheduler

    return get_scheduler(
        choice.name,
        optimizer=optimizer,
        num_warmup_steps=warmup,
        num_training_steps=total,
        scheduler_specific_kwargs=dict(choice.kwargs),
    )


def _build_one_cycle(optimizer, choice: SchedulerChoice, warmup: int, total: int):
    from torch.optim.lr_scheduler import OneCycleLR

    kwargs: dict[str, Any] = {"pct_start": warmup / total if total else 0.0, "anneal_strategy": "cos"}
    kwargs.update(choice.kwargs)
    return OneCycleLR(optimizer, max_lr=optimizer.defaults["lr"], total_steps=total, **kwargs)


def _read_hf_lr(scheduler, optimizer) -> float:
    """As the Trainer reads it: metric-driven schedulers have no get_last_lr of their own."""
    if hasattr(scheduler, "get_last_lr") and not _is_metric_driven(scheduler):
        return scheduler.get_last_lr()[0]
    return optimizer.param_groups[0]["lr"]


def _read_last_lr(scheduler, optimizer) -> float:
    return scheduler.get_last_lr()[0]


def _is_metric_driven(scheduler) -> bool:
    from torch.optim.lr_scheduler import ReduceLROnPlateau

    return isinstance(scheduler, ReduceLROnPlateau) or type(scheduler).__name__ == "GreedyLR"


def _run_real(label: str, build, read_lr, choice, base_lr: float, warmup: int, total: int, count: int) -> EngineResult:
    import torch

    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=base_lr)
    lrs: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "scheduler.step() before optimizer.step()": no training here
        try:
            scheduler = build(optimizer, choice, warmup, total)
        except (ValueError, TypeError, ZeroDivisionError) as exc:  # what the framework raises for a bad config
            return EngineResult((), label, error=_failure(exc), fails_after=0)
        steps_scheduler = not _is_metric_driven(scheduler)  # the Trainer steps those only on eval metrics
        try:
            for _ in range(count):
                lr = read_lr(scheduler, optimizer)
                lrs.append(float(lr.item() if torch.is_tensor(lr) else lr))
                if steps_scheduler:
                    scheduler.step()
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            return EngineResult(tuple(lrs), label, error=_failure(exc), fails_after=len(lrs))
    return EngineResult(tuple(lrs), label)
