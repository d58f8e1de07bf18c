"""Built-in LR formulas: the same arithmetic as the frameworks' schedulers, without torch.

Each framework's module supplies its schedulers' formulas (a :class:`model.SchedulerFamily` on the
SchedulerChoice); this module holds what they share. Every builder takes the base LR, the warmup and
total step counts the framework passes and the scheduler kwargs, checks the kwargs the way the real
constructor would, and returns ``lr_at(index)``: the LR after ``index`` scheduler steps, i.e. the LR
of optimizer step ``index + 1``. ``tests/schedule/test_lr_engines.py`` holds them equal to the real
schedulers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mldebug_cli.schedule.model import LrAt, SchedulerChoice


class ScheduleBuildError(Exception):
    """The framework would fail to build this scheduler; the message says why."""


def builtin_lr_at(choice: SchedulerChoice, base_lr: float, warmup: int, total: int) -> LrAt:
    builder = choice.family.builders[choice.name]
    return builder(base_lr, warmup, total, dict(choice.kwargs))


def scaled(base_lr: float, factor: Callable[[int], float]) -> LrAt:
    """LambdaLR: the LR is the base LR times the factor of the step index."""
    return lambda index: base_lr * factor(index)


def linear_ramp(index: int, warmup: int) -> float:
    return float(index) / float(max(1, warmup))


def cosine_factor(index: int, warmup: int, total: int, num_cycles: float, min_lr_rate: float) -> float:
    """A linear warmup, then a cosine of ``num_cycles`` (0.5: one half wave) from 1 down to ``min_lr_rate``."""
    if index < warmup:
        return linear_ramp(index, warmup)
    progress = float(index - warmup) / float(max(1, total - warmup))
    factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress))
    return max(0, factor * (1 - min_lr_rate) + min_lr_rate)
