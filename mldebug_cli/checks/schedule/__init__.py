"""LR-schedule checks (LR001-LR015): each looks at one :class:`~mldebug_cli.schedule.model.Simulation`."""

from __future__ import annotations

from mldebug_cli.core.findings import Location
from mldebug_cli.schedule.model import Simulation


def at_key(sim: Simulation, key: str | None, default_key: str | None = None) -> Location:
    """A finding's place: the config key (with its line) the setting came from, or the default's name."""
    return Location(path=sim.config_path, key=key or default_key, line=sim.line(key))


def lr(value: float) -> str:
    return f"{value:.3g}"
