"""One simulation: config -> settings -> step arithmetic -> the LR at every optimizer step."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text
from mldebug_cli.schedule.arithmetic import plan_steps, step_positions
from mldebug_cli.schedule.dataset_size import DatasetSize
from mldebug_cli.schedule.engine import (
    EDGE_STEPS,
    MAX_SCHEDULE_STEPS,
    sampled_steps,
    simulate_lrs,
    simulate_sampled,
)
from mldebug_cli.schedule.model import RunSpec, SchedulePoint, Simulation
from mldebug_cli.sources.config_file import ConfigFile


def simulate(config: ConfigFile, spec: RunSpec, size: DatasetSize | None, engine: str = "auto") -> Simulation:
    """The schedule ``spec`` (read from ``config``) produces on a dataset of ``size``."""
    plan = plan_steps(spec, size)
    sampled = None
    steps: Sequence[int]
    if plan.steps_run > MAX_SCHEDULE_STEPS:  # the step counts stay exact; the curve is computed where it matters
        steps = sampled_steps(plan.warmup_steps, plan.steps_run)
        result = simulate_sampled(spec.scheduler, spec.learning_rate, plan.warmup_steps, plan.total_steps, steps)
        sampled = (f"the LR curve of {plan.steps_run:,} optimizer steps is computed at {len(steps):,} of them (every "
                   f"step past {MAX_SCHEDULE_STEPS:,} is too many to list): the first and last {EDGE_STEPS:,}, those "
                   "around warmup's end and an even grid, with the built-in formulas")
    else:
        steps = range(1, plan.steps_run + 1)
        result = simulate_lrs(
            spec.scheduler, spec.learning_rate, plan.warmup_steps, plan.total_steps, plan.steps_run, engine
        )
    _require_finite(config, spec, steps, result.lrs)
    schedule = tuple(
        SchedulePoint(step=step, lr=lr, epoch=epoch, micro_batch=micro_batch)
        for step, lr, (epoch, micro_batch) in zip(steps, result.lrs, step_positions(spec, plan, steps[:len(result.lrs)]))
    )
    deepspeed_block, deepspeed_note = deepspeed_scheduler(config, spec)
    notes = spec.notes + ((deepspeed_note,) if deepspeed_note else ()) + ((sampled,) if sampled else ())
    return Simulation(
        config_path=config.path,
        config_lines=config.lines,
        spec=replace(spec, notes=notes),
        plan=plan,
        schedule=schedule,
        engine=result.engine,
        framework_version=spec.framework_version,
        scheduler_error=result.error,
        scheduler_fails_after=result.fails_after,
        deepspeed_scheduler=deepspeed_block,
    )


def _require_finite(config: ConfigFile, spec: RunSpec, steps, lrs) -> None:
    """A NaN or infinite learning rate (``lr_scheduler_kwargs: {power: .nan}``) is the config's error, named by its
    scheduler and kwargs, before any chart or check sees it."""
    import math

    bad = next(((step, lr) for step, lr in zip(steps, lrs) if not math.isfinite(lr)), None)
    if bad is None:
        return
    kwargs = ", ".join(f"{k}: {v}" for k, v in spec.scheduler.kwargs.items())
    raise InputError(f"{config.path}: lr_scheduler_type {spec.scheduler.name}"
                     + (f" with lr_scheduler_kwargs {{{kwargs}}}" if kwargs else "")
                     + f" gives a learning rate of {bad[1]} at step {bad[0]}, not a finite number",
                     hint="every scheduler setting and the learning rate must be finite numbers")


def deepspeed_scheduler(config: ConfigFile, spec: RunSpec) -> tuple[Mapping[str, Any] | None, str | None]:
    """The ``scheduler`` block of the DeepSpeed config the run names, and a note when it cannot be read."""
    value = spec.deepspeed
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        ds_config: Any = value
    else:
        path = _resolve(config, str(value))
        if path is None:
            return None, f"DeepSpeed config {value} not found: its scheduler block was not checked"
        resolved = path.resolve()
        roots = (Path.cwd().resolve(), Path(config.path).resolve().parent)
        if not any(resolved == root or root in resolved.parents for root in roots):  # the path policy: not read
            return None, (f"DeepSpeed config {value} resolves outside the working directory and the config's folder: "
                          "it was not read and its scheduler block was not checked")
        try:
            ds_config = json.loads(read_text(path))
        except (OSError, ValueError, RecursionError) as exc:  # not UTF-8 or JSON, a number too long, too deep
            return None, f"DeepSpeed config {path} could not be read ({exc}): its scheduler block was not checked"
    block = ds_config.get("scheduler") if isinstance(ds_config, Mapping) else None
    return (block if isinstance(block, Mapping) else None), None


def _resolve(config: ConfigFile, name: str) -> Path | None:
    """A path as given (relative to the working directory), else relative to the config's folder."""
    for candidate in (Path(name), Path(config.path).parent / name):
        if candidate.is_file():
            return candidate
    return None

