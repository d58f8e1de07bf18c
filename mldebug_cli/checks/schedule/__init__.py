"""LR-schedule checks (LR001-LR015): each looks at one :class:`~mldebug_cli.schedule.model.Simulation`."""

from __future__ import annotations

from mldebug_cli.core import numbers
from mldebug_cli.core.findings import Location
from mldebug_cli.schedule.model import Simulation


def at_key(sim: Simulation, key: str | None, default_key: str | None = None) -> Location:
    """A finding's place: the config key (with its line) the setting came from, or the default's name."""
    return Location(path=sim.config_path, key=key or default_key, line=sim.line(key))


def lr(value: float) -> str:
    return numbers.lr(value)


def warmup_share_hint(sim: Simulation, share: float) -> str:
    """``warmup_ratio: 0.03`` (axolotl, LLaMA-Factory), ``warmup_steps: 0.03`` (transformers >= 5 reads a share),
    or a step count where only steps are read (torchtune)."""
    spec = sim.spec
    if spec.warmup_share_key is None:
        steps = max(1, round(share * sim.plan.total_steps))
        return f"{spec.warmup_steps_key}: {steps} ({share:.0%} of {numbers.plural(sim.plan.total_steps, 'step')})"
    return f"{spec.warmup_share_key}: {share:g}"
