"""``inspect-data --config CONFIG --step N``: the rows of optimizer step N, as the config's trainer batches them
(the batch plan), checked and shown like ``--rows``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import Report
from mldebug_cli.schedule.batch_plan import BatchPlan, OptimizerStep

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework

MAX_LISTED = 64  # rows listed per rank in the report's context line


def at_step(build: Callable[..., Report], config: str, step: int, world_size: int = 1,
            framework: Framework | None = None) -> Callable[..., Report]:
    """``build`` (an inspect-data report builder) restricted to the rows of optimizer ``step`` (1-based);
    ``framework``: the one that read the config (None: detected from it)."""
    if step < 1:
        raise UsageError(f"--step must be 1 or more (optimizer steps count from 1), got {step}")

    def built(options: Any, progress: Callable[[int, int], None] | None = None) -> Report:
        from mldebug_cli.frameworks.sampling import batch_plan
        from mldebug_cli.frameworks.selector import read_trainer_facts
        from mldebug_cli.pipelines.row_batches import open_rows

        facts = read_trainer_facts(config, framework, world_size)
        plan = batch_plan(facts, len(open_rows(options)), config)
        chosen = plan.step(step)
        if chosen is None:
            raise InputError(f"{config}: step {step} is past the end of the run ({plan.total_steps:,} optimizer steps)",
                             hint=f"give --step between 1 and {plan.total_steps:,}")
        rows = tuple(dict.fromkeys(chosen.rows))
        report = build(replace(options, rows=rows, show=len(rows), sample=None, all_rows=False), progress)
        return replace(report, context={**report.context, **step_context(plan, chosen)})

    return built


def step_context(plan: BatchPlan, step: OptimizerStep) -> dict[str, str]:
    """The report's lines for one step: the plan's settings, and each rank's micro-batches."""
    lines = {"batch plan": f"{plan.settings.describe()}; {plan.total_steps:,} optimizer steps"}
    for rank, batches in enumerate(step.micro_batches):
        listed = "; ".join(f"micro-batch {i + 1}: " + ", ".join(str(r) for r in batch) for i, batch in enumerate(batches))
        count = sum(len(b) for b in batches)
        if count > MAX_LISTED:
            listed = "rows " + ", ".join([str(r) for b in batches for r in b][:MAX_LISTED]) + f", ... ({count:,} rows)"
        name = f"step {step.step} (epoch {step.epoch + 1})" + (f", rank {rank}" if len(step.micro_batches) > 1 else "")
        lines[name] = listed or "no rows"
    return lines
