"""axolotl's schedulers and step counting (axolotl.utils.schedulers, calculate_total_num_steps).

``cosine_min_lr_ratio``, ``cosine_constant_lr_ratio`` and ``lr_quadratic_warmup`` select axolotl's own cosine
variants, and ``lr_scheduler: one_cycle|rex`` its alternate schedulers: :data:`SCHEDULERS` holds their built-in
formulas (and torch's OneCycleLR, which axolotl builds for one_cycle, when torch imports); the other names go to
transformers' get_scheduler (``hf.schedulers``).

axolotl computes the total steps itself and passes them to the HF Trainer as ``max_steps``:
``ceil(rows * epochs / (micro_batch * accumulation * world_size))`` (``floor`` when packed); warmup defaults to
``min(int(0.03 * T), 100)`` and the logging interval to ``max(min(int(0.005 * T), 10), 1)``. :data:`COUNTING` is
that arithmetic on top of the Trainer loop's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mldebug_cli.schedule.arithmetic import missing_rows, trainer_plan
from mldebug_cli.schedule.formulas import ScheduleBuildError, linear_ramp, scaled
from mldebug_cli.schedule.model import (
    PRECOMPUTED_STEPS,
    Builder,
    LrAt,
    RealScheduler,
    RunSpec,
    SchedulerChoice,
    SchedulerFamily,
    StepCounting,
    StepPlan,
)

WARMUP_SHARE, WARMUP_CAP = 0.03, 100
_ONE_CYCLE_KWARGS = frozenset(
    {"pct_start", "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum", "div_factor",
     "final_div_factor", "three_phase"}
)


def _ax_cosine_min_lr(base_lr, warmup, total, kwargs) -> LrAt:
    ratio = kwargs["min_lr_ratio"]

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        progress = float(index - warmup) / float(max(1, total - warmup))
        return (1 - ratio) * (0.5 * (1.0 + math.cos(math.pi * progress))) + ratio

    return scaled(base_lr, factor)


def _ax_cosine_decay_constant(base_lr, warmup, total, kwargs) -> LrAt:
    ratio, constant_ratio = kwargs["min_lr_ratio"], kwargs["constant_lr_ratio"]
    decay_end = int(total * constant_ratio)  # the LR stays at the minimum from here on

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        progress = float(min(index, decay_end) - warmup) / float(max(1, decay_end - warmup))
        return max(0, (1 - ratio) * 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress))) + ratio

    return scaled(base_lr, factor)


def _ax_cosine_quadratic_warmup(base_lr, warmup, total, kwargs) -> LrAt:
    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup) ** 2
        progress = float(index - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))

    return scaled(base_lr, factor)


def _ax_rex(base_lr, warmup, total, kwargs) -> LrAt:
    min_lr = kwargs.get("min_lr", 0.0)
    if min_lr > base_lr:
        raise ScheduleBuildError(f'Value of "min_lr" should be less than value of "max_lr". Got min_lr={min_lr}')
    if warmup > total:
        raise ScheduleBuildError(f"num_warmup_steps ({warmup}) must be less than or equal to total_steps ({total}).")
    remaining = total - warmup

    def lr_at(index: int) -> float:
        if 1 <= index <= warmup:
            return base_lr * index / warmup
        after = index - warmup
        if after >= remaining or after == -1 or remaining <= 0:
            return min_lr
        z = (remaining - after % remaining) / remaining  # Python's modulo: step 0 of a warmup lands mid-curve
        return base_lr * (min_lr / base_lr + (1.0 - min_lr / base_lr) * (z / (0.1 + 0.9 * z)))

    return lr_at


def _ax_one_cycle(base_lr, warmup, total, kwargs) -> LrAt:
    """torch's OneCycleLR as axolotl builds it: max_lr = LR, pct_start = W / T, cosine annealing."""
    unknown = sorted(set(kwargs) - _ONE_CYCLE_KWARGS)
    if unknown:
        raise ScheduleBuildError(f"OneCycleLR got an unexpected keyword argument {unknown[0]!r}")
    if total <= 0:
        raise ScheduleBuildError(f"Expected positive integer total_steps, but got {total}")
    pct_start = kwargs.get("pct_start", warmup / total)
    if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
        raise ScheduleBuildError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
    strategy = kwargs.get("anneal_strategy", "cos")
    if strategy not in ("cos", "linear"):
        raise ScheduleBuildError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {strategy}")
    initial = base_lr / kwargs.get("div_factor", 25.0)
    final = initial / kwargs.get("final_div_factor", 1e4)
    rise_end = float(pct_start * total) - 1
    phases: tuple[tuple[float, float, float], ...]
    if kwargs.get("three_phase", False):
        phases = ((rise_end, initial, base_lr), (float(2 * pct_start * total) - 2, base_lr, initial),
                  (total - 1, initial, final))
    else:
        phases = ((rise_end, initial, base_lr), (total - 1, base_lr, final))

    def anneal(start: float, end: float, pct: float) -> float:
        if strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def lr_at(index: int) -> float:
        start_step = 0.0
        for i, (end_step, start, end) in enumerate(phases):
            if index <= end_step or i == len(phases) - 1:
                return anneal(start, end, (index - start_step) / (end_step - start_step))
            start_step = end_step
        raise AssertionError("unreachable: the last phase always answers")

    return lr_at


_AXOLOTL_BUILDERS: Mapping[str, Builder] = {
    "cosine_min_lr": _ax_cosine_min_lr,
    "cosine_decay_constant": _ax_cosine_decay_constant,
    "cosine_quadratic_warmup": _ax_cosine_quadratic_warmup,
    "rex": _ax_rex,
    "one_cycle": _ax_one_cycle,
}


def _real(choice: SchedulerChoice) -> RealScheduler | None:
    if choice.name != "one_cycle":
        return None
    try:
        import torch
    except ImportError:
        return None
    return RealScheduler(f"torch {torch.__version__} OneCycleLR", _build_one_cycle, _read_last_lr)


def _build_one_cycle(optimizer, choice: SchedulerChoice, warmup: int, total: int):
    from torch.optim.lr_scheduler import OneCycleLR

    kwargs: dict[str, Any] = {"pct_start": warmup / total if total else 0.0, "anneal_strategy": "cos"}
    kwargs.update(choice.kwargs)
    return OneCycleLR(optimizer, max_lr=optimizer.defaults["lr"], total_steps=total, **kwargs)


def _read_last_lr(scheduler, optimizer) -> float:
    return scheduler.get_last_lr()[0]


SCHEDULERS = SchedulerFamily("axolotl.utils.schedulers", builders=_AXOLOTL_BUILDERS, real=_real)


# step counting -----------------------------------------------------------------------------------


def total_steps(spec: RunSpec, rows: int) -> int:
    """calculate_total_num_steps: rows * epochs over the global batch, rounded up (down when packed)."""
    global_batch = spec.batch_size * spec.grad_accum * spec.world_size
    if spec.packing.enabled:
        return math.floor(rows * spec.num_epochs / global_batch)
    return math.ceil(rows * spec.num_epochs / global_batch)


def warmup_steps(spec: RunSpec, total_num_steps: int) -> float:
    """The warmup_steps value axolotl hands to TrainingArguments."""
    if spec.warmup_steps is not None:
        warmup = spec.warmup_steps
    elif spec.warmup_ratio is not None:
        warmup = max(int(spec.warmup_ratio * total_num_steps), 0)
    else:
        warmup = min(int(WARMUP_SHARE * total_num_steps), WARMUP_CAP)
    return 2 if warmup == 1 else warmup  # axolotl never warms up for a single step


def logging_steps(total_num_steps: int) -> int:
    return max(min(int(0.005 * total_num_steps), 10), 1)


def plan(spec: RunSpec, rows: int | None) -> StepPlan:
    if rows is None:
        if spec.max_steps <= 0:
            raise missing_rows(spec)
        estimated = spec.max_steps
    else:
        estimated = total_steps(spec, rows)
    total_num_steps = min(estimated, spec.max_steps) if spec.max_steps > 0 else estimated
    hf_spec = replace(spec, warmup_steps=warmup_steps(spec, total_num_steps), warmup_ratio=None)
    max_steps = spec.max_steps if spec.max_steps > 0 else total_num_steps
    result = trainer_plan(hf_spec, rows, max_steps=max_steps if max_steps > 0 else -1)
    return replace(result, epochs_requested=spec.num_epochs)


COUNTING = StepCounting(PRECOMPUTED_STEPS, plan=plan, total_steps=total_steps, warmup_steps=warmup_steps,
                        logging_steps=logging_steps)
