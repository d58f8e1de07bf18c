"""The range of every numeric command-line flag, checked in one place before a command runs.

Each ``int`` or ``float`` option of every command has a line in ``RANGES`` (by its flag, the same range in every
command); ``ranged`` wraps a command so that a value outside it (negative, zero where zero means nothing, NaN, an
infinity, a number past what any run has) is a one-line ``Error:`` with exit 2 before anything is read. A command
with a numeric option that has no line here fails when it is registered, so a new flag cannot miss its range
(tests/reliability/test_numeric_flags.py runs every flag of the typer app through the hostile values).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

import typer

from mldebug_cli.cli.common import errors_exit
from mldebug_cli.core.errors import UsageError


@dataclass(frozen=True)
class FlagRange:
    """``low`` to ``high`` (both included, unless ``above_low``); ``unit`` names what a float counts."""

    low: float
    high: float
    unit: str = ""
    above_low: bool = False
    hint: str | None = None

    def allows(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        return (value > self.low if self.above_low else value >= self.low) and value <= self.high

    def expected(self) -> str:
        what = f"a number of {self.unit} " if self.unit else ""
        low, high = _shown(self.low), _shown(self.high)
        return f"{what}above {low} and at most {high}" if self.above_low else f"{what}from {low} to {high}"


def _shown(bound: float) -> str:
    return f"{bound:,.0f}" if bound == int(bound) else f"{bound:,}"


_ALL_ROWS = "--all checks every row"
RANGES: dict[str, FlagRange] = {
    "--world-size": FlagRange(1, 1_000_000),  # processes; frameworks.trainer_facts.MAX_WORLD_SIZE
    "--max-length": FlagRange(1, 2**24),  # tokens: a model config's largest vocabulary/context bound
    "--step": FlagRange(1, 10**12),  # optimizer steps count from 1
    "--sample": FlagRange(1, 10**9, hint=_ALL_ROWS),
    "--show": FlagRange(0, 1_000_000),  # rows shown; --rows names at most 1,000,000 too
    "--workers": FlagRange(1, 4096),  # processes on this machine
    "--ray-concurrency": FlagRange(1, 10_000, hint="an actor per CPU of the cluster is the default"),
    "--num-rows": FlagRange(0, 10**15),  # training rows before packing
    "--vocab-size": FlagRange(2, 2**24),  # sources.model_config's vocabulary bound
    "--steps": FlagRange(0, 100_000),  # probe's training steps
    "--interval": FlagRange(0, 86_400, unit="seconds"),  # a day between reads
    "--gpu-memory": FlagRange(0, 2**20, unit="GiB", above_low=True),  # memory.gpus.MAX_GIB
    "--host-memory": FlagRange(0, 2**20, unit="GiB", above_low=True),
}


def numeric_flags(command: Callable[..., Any]) -> dict[str, str]:
    """``{parameter: flag}`` of the command's ``int``/``float`` options (``int | None`` too)."""
    found = {}
    hints = get_type_hints(inspect.unwrap(command))  # the signature of a wrapped command keeps the source's strings
    for name, parameter in inspect.signature(command).parameters.items():
        default = parameter.default
        if not isinstance(default, typer.models.OptionInfo) or not _is_number(hints.get(name, parameter.annotation)):
            continue
        decls = [d for d in (default.default, *(default.param_decls or ())) if isinstance(d, str) and d.startswith("--")]
        found[name] = decls[0] if decls else "--" + name.replace("_", "-")
    return found


def _is_number(annotation: Any) -> bool:
    if get_origin(annotation) is Union or type(annotation).__name__ == "UnionType":
        return any(_is_number(a) for a in get_args(annotation) if a is not type(None))
    return annotation in (int, float)


def ranged(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with its numeric flags checked against ``RANGES`` first; a flag without a range is refused here."""
    flags = numeric_flags(command)
    missing = sorted(flag for flag in flags.values() if flag not in RANGES)
    if missing:
        raise TypeError(f"{command.__name__}: no range for {', '.join(missing)} in mldebug_cli.cli.flag_ranges.RANGES")

    @functools.wraps(command)
    def checked(**kwargs: Any) -> Any:
        with errors_exit():
            for name, flag in flags.items():
                check_flag(flag, kwargs.get(name))
        return command(**kwargs)

    return checked


def check_flag(flag: str, value: float | None) -> None:
    """A one-line error when ``value`` (None: not given) is outside the flag's range."""
    if value is None or isinstance(value, bool):
        return
    bounds = RANGES[flag]
    if not bounds.allows(value):
        raise UsageError(f"{flag} must be {bounds.expected()}, got {value}", hint=bounds.hint)
