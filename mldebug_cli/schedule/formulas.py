"""Built-in LR formulas: the same arithmetic as the frameworks' schedulers, without torch.

Every builder takes the base LR, the warmup and total step counts the framework passes and the
scheduler kwargs, checks the kwargs the way the real constructor would, and returns
``lr_at(index)``: the LR after ``index`` scheduler steps, i.e. the LR of optimizer step
``index + 1``. ``tests/schedule/test_engines.py`` holds them equal to the real schedulers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from mldebug_cli.schedule.model import AXOLOTL_FAMILY, HF_FAMILY, TORCHTUNE_FAMILY, SchedulerChoice

LrAt = Callable[[int], float]

HF_SCHEDULER_TYPES = (
    "linear",
    "cosine",
    "cosine_with_restarts",
    "polynomial",
    "constant",
    "constant_with_warmup",
    "inverse_sqrt",
    "reduce_lr_on_plateau",
    "cosine_with_min_lr",
    "cosine_warmup_with_min_lr",
    "warmup_stable_decay",
    "greedy",
)
# get_scheduler drops every kwarg for these two
HF_KWARGS_DROPPED = frozenset({"constant", "constant_with_warmup"})
HF_IGNORES_WARMUP = frozenset({"constant", "reduce_lr_on_plateau", "greedy"})
HF_METRIC_DRIVEN = frozenset({"reduce_lr_on_plateau", "greedy"})
_PLATEAU_KWARGS = frozenset({"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"})
_GREEDY_KWARGS = frozenset(
    {"mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "warmup", "min_lr", "max_lr", "eps",
     "verbose", "smooth", "window_size", "reset_start"}
)
HF_ACCEPTED_KWARGS: Mapping[str, frozenset[str]] = {
    "linear": frozenset(),
    "cosine": frozenset({"num_cycles"}),
    "cosine_with_restarts": frozenset({"num_cycles"}),
    "polynomial": frozenset({"lr_end", "power"}),
    "inverse_sqrt": frozenset({"timescale"}),
    "reduce_lr_on_plateau": _PLATEAU_KWARGS,
    "cosine_with_min_lr": frozenset({"num_cycles", "min_lr", "min_lr_rate"}),
    "cosine_warmup_with_min_lr": frozenset({"num_cycles", "min_lr", "min_lr_rate", "warmup_lr_rate"}),
    "warmup_stable_decay": frozenset(
        {"num_decay_steps", "num_stable_steps", "warmup_type", "decay_type", "min_lr_ratio", "num_cycles"}
    ),
    "greedy": _GREEDY_KWARGS,
}
AXOLOTL_SCHEDULERS = ("cosine_min_lr", "cosine_decay_constant", "cosine_quadratic_warmup", "rex", "one_cycle")
_ONE_CYCLE_KWARGS = frozenset(
    {"pct_start", "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum", "div_factor",
     "final_div_factor", "three_phase"}
)


class ScheduleBuildError(Exception):
    """The framework would fail to build this scheduler; the message says why."""


def builtin_lr_at(choice: SchedulerChoice, base_lr: float, warmup: int, total: int) -> LrAt:
    builders = {HF_FAMILY: _HF_BUILDERS, AXOLOTL_FAMILY: _AXOLOTL_BUILDERS, TORCHTUNE_FAMILY: _TORCHTUNE_BUILDERS}
    builder = builders[choice.family][choice.name]
    return builder(base_lr, warmup, total, dict(choice.kwargs))


def check_hf_kwargs(name: str, kwargs: Mapping[str, Any]) -> None:
    """Raise like the real constructor does for kwargs it does not take."""
    if name in HF_KWARGS_DROPPED:
        return
    unknown = sorted(set(kwargs) - HF_ACCEPTED_KWARGS[name])
    if unknown:
        raise ScheduleBuildError(f"the {name} scheduler got an unexpected keyword argument {unknown[0]!r}")


def _scaled(base_lr: float, factor: Callable[[int], float]) -> LrAt:
    """LambdaLR: the LR is the base LR times the factor of the step index."""
    return lambda index: base_lr * factor(index)


def _linear_ramp(index: int, warmup: int) -> float:
    return float(index) / float(max(1, warmup))


# transformers ------------------------------------------------------------------------------------


def _hf_constant(base_lr, warmup, total, kwargs) -> LrAt:
    return _scaled(base_lr, lambda index: 1)


def _hf_constant_with_warmup(base_lr, warmup, total, kwargs) -> LrAt:
    def factor(index: int) -> float:
        return float(index) / float(max(1.0, warmup)) if index < warmup else 1.0

    return _scaled(base_lr, factor)


def _hf_linear(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("linear", kwargs)

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        return max(0.0, float(total - index) / float(max(1, total - warmup)))

    return _scaled(base_lr, factor)


def _cosine_factor(index: int, warmup: int, total: int, num_cycles: float, min_lr_rate: float) -> float:
    if index < warmup:
        return _linear_ramp(index, warmup)
    progress = float(index - warmup) / float(max(1, total - warmup))
    factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress))
    return max(0, factor * (1 - min_lr_rate) + min_lr_rate)


def _hf_cosine(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine", kwargs)
    num_cycles = kwargs.get("num_cycles", 0.5)
    return _scaled(base_lr, lambda index: _cosine_factor(index, warmup, total, num_cycles, 0.0))


def _hf_cosine_with_restarts(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine_with_restarts", kwargs)
    num_cycles = kwargs.get("num_cycles", 1)

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        progress = float(index - warmup) / float(max(1, total - warmup))
        if progress >= 1.0:
            return 0.0
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))

    return _scaled(base_lr, factor)


def _hf_polynomial(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("polynomial", kwargs)
    lr_end, power = kwargs.get("lr_end", 1e-7), kwargs.get("power", 1.0)
    if not base_lr > lr_end:
        raise ScheduleBuildError(f"lr_end ({lr_end}) must be smaller than initial lr ({base_lr})")

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        if index > total:
            return lr_end / base_lr
        remaining = 1 - (index - warmup) / (total - warmup)
        return ((base_lr - lr_end) * remaining**power + lr_end) / base_lr

    return _scaled(base_lr, factor)


def _hf_inverse_sqrt(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("inverse_sqrt", kwargs)
    timescale = kwargs.get("timescale")
    if timescale is None:
        timescale = warmup or 10_000

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        return 1.0 / math.sqrt((index + timescale - warmup) / timescale)

    return _scaled(base_lr, factor)


def _hf_metric_driven(name: str) -> Callable[..., LrAt]:
    def build(base_lr, warmup, total, kwargs) -> LrAt:
        check_hf_kwargs(name, kwargs)
        return lambda index: base_lr  # unchanged until an eval metric plateaus

    return build


def _min_lr_rate(name: str, base_lr: float, kwargs: Mapping[str, Any]) -> float:
    min_lr, min_lr_rate = kwargs.get("min_lr"), kwargs.get("min_lr_rate")
    if min_lr is not None and min_lr_rate is not None:
        raise ScheduleBuildError(f"{name}: only one of min_lr or min_lr_rate should be set")
    if min_lr is not None:
        return min_lr / base_lr
    if min_lr_rate is None:
        raise ScheduleBuildError(f"{name}: one of min_lr or min_lr_rate should be set through lr_scheduler_kwargs")
    return min_lr_rate


def _hf_cosine_with_min_lr(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine_with_min_lr", kwargs)
    rate = _min_lr_rate("cosine_with_min_lr", base_lr, kwargs)
    num_cycles = kwargs.get("num_cycles", 0.5)
    return _scaled(base_lr, lambda index: _cosine_factor(index, warmup, total, num_cycles, rate))


def _hf_cosine_warmup_with_min_lr(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine_warmup_with_min_lr", kwargs)
    rate = _min_lr_rate("cosine_warmup_with_min_lr", base_lr, kwargs)
    num_cycles, warmup_lr_rate = kwargs.get("num_cycles", 0.5), kwargs.get("warmup_lr_rate")

    def factor(index: int) -> float:
        step, warm, steps = float(index), float(warmup), float(total)
        if step < warm:  # this scheduler counts warmup from 1/W, so step 1 is not at LR 0
            if warmup_lr_rate is None:
                return (step + 1.0) / max(1.0, warm)
            return float(warmup_lr_rate) + (1.0 - float(warmup_lr_rate)) * step / max(1, warm - 1)
        progress = (step - warm + 1.0) / max(1.0, steps - warm)
        cosine = 0.5 * (1.0 + math.cos(math.pi * num_cycles * 2.0 * progress))
        return max(0, cosine * (1 - rate) + rate)

    return _scaled(base_lr, factor)


_WSD_SHAPES = ("linear", "cosine", "1-sqrt")


def _hf_warmup_stable_decay(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("warmup_stable_decay", kwargs)
    if "num_decay_steps" not in kwargs:
        raise ScheduleBuildError("warmup_stable_decay: missing required argument 'num_decay_steps'")
    decay, stable = kwargs["num_decay_steps"], kwargs.get("num_stable_steps")
    warmup_type, decay_type = kwargs.get("warmup_type", "linear"), kwargs.get("decay_type", "cosine")
    min_ratio, num_cycles = kwargs.get("min_lr_ratio", 0), kwargs.get("num_cycles", 0.5)
    for label, shape in (("warmup", warmup_type), ("decay", decay_type)):
        if shape not in _WSD_SHAPES:
            raise ScheduleBuildError(f"Unknown {label} type: {shape}, expected 'linear', 'cosine' or '1-sqrt'")
    if stable is None:
        stable = total - warmup - decay

    def shaped(progress: float, shape: str, rising: bool) -> float:
        if shape == "linear":
            return progress if rising else 1.0 - progress
        if shape == "cosine":
            return 0.5 * (1.0 - math.cos(math.pi * progress)) if rising else (
                0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))
        return 1.0 - math.sqrt(1.0 - progress) if rising else 1.0 - math.sqrt(progress)

    def factor(index: int) -> float:
        if index < warmup:
            value = shaped(float(index) / float(max(1, warmup)), warmup_type, rising=True)
            return max(0.0, value * (1.0 - min_ratio) + min_ratio)
        if index < warmup + stable:
            return 1.0
        if index < warmup + stable + decay:
            progress = float(index - warmup - stable) / float(max(1, decay))
            return max(0.0, shaped(progress, decay_type, rising=False) * (1.0 - min_ratio) + min_ratio)
        return min_ratio

    return _scaled(base_lr, factor)


_HF_BUILDERS: Mapping[str, Callable[..., LrAt]] = {
    "linear": _hf_linear,
    "cosine": _hf_cosine,
    "cosine_with_restarts": _hf_cosine_with_restarts,
    "polynomial": _hf_polynomial,
    "constant": _hf_constant,
    "constant_with_warmup": _hf_constant_with_warmup,
    "inverse_sqrt": _hf_inverse_sqrt,
    "reduce_lr_on_plateau": _hf_metric_driven("reduce_lr_on_plateau"),
    "cosine_with_min_lr": _hf_cosine_with_min_lr,
    "cosine_warmup_with_min_lr": _hf_cosine_warmup_with_min_lr,
    "warmup_stable_decay": _hf_warmup_stable_decay,
    "greedy": _hf_metric_driven("greedy"),
}


# axolotl -----------------------------------------------------------------------------------------


def _ax_cosine_min_lr(base_lr, warmup, total, kwargs) -> LrAt:
    ratio = kwargs["min_lr_ratio"]

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        progress = float(index - warmup) / float(max(1, total - warmup))
        return (1 - ratio) * (0.5 * (1.0 + math.cos(math.pi * progress))) + ratio

    return _scaled(base_lr, factor)


def _ax_cosine_decay_constant(base_lr, warmup, total, kwargs) -> LrAt:
    ratio, constant_ratio = kwargs["min_lr_ratio"], kwargs["constant_lr_ratio"]
    decay_end = int(total * constant_ratio)  # the LR stays at the minimum from here on

    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup)
        progress = float(min(index, decay_end) - warmup) / float(max(1, decay_end - warmup))
        return max(0, (1 - ratio) * 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress))) + ratio

    return _scaled(base_lr, factor)


def _ax_cosine_quadratic_warmup(base_lr, warmup, total, kwargs) -> LrAt:
    def factor(index: int) -> float:
        if index < warmup:
            return _linear_ramp(index, warmup) ** 2
        progress = float(index - warmup) / float(max(1, total - warmup))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))

    return _scaled(base_lr, factor)


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


_AXOLOTL_BUILDERS: Mapping[str, Callable[..., LrAt]] = {
    "cosine_min_lr": _ax_cosine_min_lr,
    "cosine_decay_constant": _ax_cosine_decay_constant,
    "cosine_quadratic_warmup": _ax_cosine_quadratic_warmup,
    "rex": _ax_rex,
    "one_cycle": _ax_one_cycle,
}


# torchtune ---------------------------------------------------------------------------------------


def _tt_cosine(base_lr, warmup, total, kwargs) -> LrAt:
    num_cycles = kwargs.get("num_cycles", 0.5)

    def factor(index: int) -> float:
        if index < warmup:
            return index / max(1, warmup)
        progress = (index - warmup) / max(1, total - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * num_cycles * 2.0 * progress)))

    return _scaled(base_lr, factor)


_TORCHTUNE_BUILDERS: Mapping[str, Callable[..., LrAt]] = {
    "cosine": _tt_cosine,
    "constant": lambda base_lr, warmup, total, kwargs: (lambda index: base_lr),
}
