"""transformers' schedulers (``get_scheduler``, transformers.optimization): the family every framework that runs
the HF Trainer builds (transformers, TRL, LLaMA-Factory, Unsloth, and axolotl for the names it does not build
itself).

:data:`SCHEDULERS` is the :class:`~mldebug_cli.schedule.model.SchedulerFamily` a SchedulerChoice of
``lr_scheduler_type`` carries: the names get_scheduler takes, the kwargs each accepts, the built-in formula of
each (``tests/schedule/test_lr_engines.py`` holds them equal to get_scheduler's) and, when torch imports,
get_scheduler itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from mldebug_cli.schedule.formulas import ScheduleBuildError, cosine_factor, linear_ramp, scaled
from mldebug_cli.schedule.model import Builder, LrAt, RealScheduler, SchedulerChoice, SchedulerFamily

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
# the kwargs of which one must be given (get_scheduler raises without them)
HF_REQUIRED_KWARGS: Mapping[str, tuple[str, ...]] = {
    "cosine_with_min_lr": ("min_lr", "min_lr_rate"),
    "cosine_warmup_with_min_lr": ("min_lr", "min_lr_rate"),
    "warmup_stable_decay": ("num_decay_steps",),
}


def check_hf_kwargs(name: str, kwargs: Mapping[str, Any]) -> None:
    """Raise like the real constructor does for kwargs it does not take."""
    if name in HF_KWARGS_DROPPED:
        return
    unknown = sorted(set(kwargs) - HF_ACCEPTED_KWARGS[name])
    if unknown:
        raise ScheduleBuildError(f"the {name} scheduler got an unexpected keyword argument {unknown[0]!r}")


def _hf_constant(base_lr, warmup, total, kwargs) -> LrAt:
    return scaled(base_lr, lambda index: 1)


def _hf_constant_with_warmup(base_lr, warmup, total, kwargs) -> LrAt:
    def factor(index: int) -> float:
        return float(index) / float(max(1.0, warmup)) if index < warmup else 1.0

    return scaled(base_lr, factor)


def _hf_linear(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("linear", kwargs)

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        return max(0.0, float(total - index) / float(max(1, total - warmup)))

    return scaled(base_lr, factor)


def _hf_cosine(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine", kwargs)
    num_cycles = kwargs.get("num_cycles", 0.5)
    return scaled(base_lr, lambda index: cosine_factor(index, warmup, total, num_cycles, 0.0))


def _hf_cosine_with_restarts(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("cosine_with_restarts", kwargs)
    num_cycles = kwargs.get("num_cycles", 1)

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        progress = float(index - warmup) / float(max(1, total - warmup))
        if progress >= 1.0:
            return 0.0
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * ((float(num_cycles) * progress) % 1.0))))

    return scaled(base_lr, factor)


def _hf_polynomial(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("polynomial", kwargs)
    lr_end, power = kwargs.get("lr_end", 1e-7), kwargs.get("power", 1.0)
    if not base_lr > lr_end:
        raise ScheduleBuildError(f"lr_end ({lr_end}) must be smaller than initial lr ({base_lr})")

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        if index > total:
            return lr_end / base_lr
        remaining = 1 - (index - warmup) / (total - warmup)
        return ((base_lr - lr_end) * remaining**power + lr_end) / base_lr

    return scaled(base_lr, factor)


def _hf_inverse_sqrt(base_lr, warmup, total, kwargs) -> LrAt:
    check_hf_kwargs("inverse_sqrt", kwargs)
    timescale = kwargs.get("timescale")
    if timescale is None:
        timescale = warmup or 10_000

    shift = timescale - warmup  # transformers' order of operations: a float timescale rounds as it does

    def factor(index: int) -> float:
        if index < warmup:
            return linear_ramp(index, warmup)
        return 1.0 / math.sqrt((index + shift) / timescale)

    return scaled(base_lr, factor)


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
    return scaled(base_lr, lambda index: cosine_factor(index, warmup, total, num_cycles, rate))


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

    return scaled(base_lr, factor)


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

    return scaled(base_lr, factor)


_HF_BUILDERS: Mapping[str, Builder] = {
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


def real_engine_version() -> str | None:
    """``transformers x.y`` when transformers and torch import, else None."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError:
        return None
    return f"transformers {transformers.__version__}"


# transformers releases at which tests/schedule/test_lr_engines.py holds every built-in formula equal to
# get_scheduler's LRs, float for float (the pinned newest and the lowest pyproject allows; a release is added here
# only after those tests passed on it)
EXACT_RELEASES = frozenset({"5.22.2", "5.24.0"})
_SHAPE_KWARGS = frozenset({"warmup_type", "decay_type"})  # the kwargs that are names, not numbers


def _exact(choice: SchedulerChoice) -> str | None:
    """The real engine's name when the built-in formula gives get_scheduler's LRs for this choice: a recorded
    transformers release, torch installed (else the real one would not run), plain numbers as kwargs (a string or a
    boolean may be read differently by the two) and none for a metric-driven scheduler (its constructor checks their
    values; the formula only their names). Found without importing torch or transformers."""
    import importlib.util

    from mldebug_cli.frameworks import versions

    if choice.name in HF_METRIC_DRIVEN and choice.kwargs:
        return None
    for key, value in choice.kwargs.items():
        if key in _SHAPE_KWARGS and value in _WSD_SHAPES:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
    release = versions.installed("transformers")
    if release not in EXACT_RELEASES or importlib.util.find_spec("torch") is None:
        return None
    return f"transformers {release}"


def _real(choice: SchedulerChoice) -> RealScheduler | None:
    version = real_engine_version()
    return None if version is None else RealScheduler(version, _build, _read_lr, steps=_steps)


def _build(optimizer, choice: SchedulerChoice, warmup: int, total: int):
    from transformers import get_scheduler

    return get_scheduler(
        choice.name,
        optimizer=optimizer,
        num_warmup_steps=warmup,
        num_training_steps=total,
        scheduler_specific_kwargs=dict(choice.kwargs),
    )


def _read_lr(scheduler, optimizer) -> float:
    """As the Trainer reads it: metric-driven schedulers have no get_last_lr of their own."""
    if hasattr(scheduler, "get_last_lr") and not _is_metric_driven(scheduler):
        return scheduler.get_last_lr()[0]
    return optimizer.param_groups[0]["lr"]


def _steps(scheduler) -> bool:
    return not _is_metric_driven(scheduler)  # the Trainer steps those only on eval metrics


def _is_metric_driven(scheduler) -> bool:
    from torch.optim.lr_scheduler import ReduceLROnPlateau

    return isinstance(scheduler, ReduceLROnPlateau) or type(scheduler).__name__ == "GreedyLR"


SCHEDULERS = SchedulerFamily(
    "transformers.optimization",
    builders=_HF_BUILDERS,
    real=_real,
    required_kwargs=HF_REQUIRED_KWARGS,
    with_warmup={"constant": "constant_with_warmup"},
    exact=_exact,
)
