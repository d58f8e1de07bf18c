"""``inspect-data --config CONFIG --step N``: the rows of optimizer step N, as the config's trainer batches them
(the batch plan), checked and shown like ``--rows``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.findings import Report
from mldebug_cli.schedule.batch_plan import BatchPlan, KeptRow, OptimizerStep, PlanRefused, PreparedPlan

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
        from mldebug_cli.frameworks.selector import read_trainer_facts, trainer_framework
        from mldebug_cli.pipelines.row_batches import open_rows
        from mldebug_cli.sources.config_file import load_config

        found = trainer_framework(load_config(config), framework)
        facts = read_trainer_facts(config, found, world_size)
        prepared = None
        if found.prepared_plan is not None:
            prepared = prepared_plan(build, options, found, config, world_size, progress)
            plan = prepared.plan
        else:
            plan = batch_plan(facts, len(open_rows(options)), config)
        chosen = plan.step(step)
        if chosen is None:
            raise InputError(f"{config}: step {step} is past the end of the run ({plan.total_steps:,} optimizer steps)",
                             hint=f"give --step between 1 and {plan.total_steps:,}")
        rows = tuple(dict.fromkeys(prepared.file_rows(chosen.rows) if prepared else chosen.rows))
        report = build(replace(options, rows=rows, show=len(rows), sample=None, all_rows=False), progress)
        return replace(report, context={**report.context, **step_context(plan, chosen, prepared)})

    return built


def prepared_plan(build: Callable[..., Report], options: Any, found: Framework, config: str, world_size: int,
                  progress: Callable[[int, int], None] | None) -> PreparedPlan:
    """The plan over the rows ``found`` prepares from the dataset: every row encoded first (its kept rows' lengths)."""
    from mldebug_cli.core.sections.pairs import data_section, data_summary

    encoded = build(replace(options, rows=None, show=0, sample=None, all_rows=True, sequence_lengths=True), progress)
    summary = data_summary(encoded.summary)
    kept = [(row, sizes[0], trained) for row, sizes, trained, *_ in
            data_section(encoded.summary, encoded.details).sequence_lengths or []]
    return plan_of_rows(found, config, world_size, kept, summary.rows, getattr(summary, "rows_failed", 0))


def plan_of_rows(found: Framework, config: str, world_size: int, kept: Sequence[KeptRow], total: int,
                 failed: int = 0) -> PreparedPlan:
    """The plan over the rows ``found`` prepares from a dataset file of ``total`` rows, of which mldebug's encoding
    keeps ``kept`` and could not encode ``failed``; an ``InputError`` says why it is not replayed."""
    from mldebug_cli.sources.config_file import load_config

    if found.prepared_plan is None:
        raise InputError(f"{config}: {found.name} hands its trainer the file's rows as they are: no preparation to "
                         "replay")
    if failed:
        raise InputError(f"{config}: {failed:,} rows of the dataset could not be encoded: {found.name} stops while "
                         "preparing it, and the batch plan needs every row",
                         hint="fix the rows inspect-data reports, then ask for the step again")
    try:
        return found.prepared_plan(load_config(config), world_size, kept, total)
    except PlanRefused as refused:
        raise InputError(f"{config}: the batch order is not replayed: {refused}",
                         hint="the batch plan replays the trainer's order where the config and the rows decide it") from None


def step_context(plan: BatchPlan, step: OptimizerStep, prepared: PreparedPlan | None = None) -> dict[str, str]:
    """The report's lines for one step: the plan's settings, and each rank's micro-batches (as file rows)."""
    lines = {"batch plan": f"{plan.settings.describe()}; {plan.total_steps:,} optimizer steps"}
    if prepared is not None:
        lines["prepared rows"] = f"{prepared.preparation}: {len(prepared.rows):,} rows reach the sampler"
    for rank, planned in enumerate(step.micro_batches):
        batches = [prepared.file_rows(b) for b in planned] if prepared else planned
        listed = "; ".join(f"micro-batch {i + 1}: " + ", ".join(str(r) for r in batch) for i, batch in enumerate(batches))
        count = sum(len(b) for b in batches)
        if count > MAX_LISTED:
            listed = "rows " + ", ".join([str(r) for b in batches for r in b][:MAX_LISTED]) + f", ... ({count:,} rows)"
        name = f"step {step.step} (epoch {step.epoch + 1})" + (f", rank {rank}" if len(step.micro_batches) > 1 else "")
        lines[name] = listed or "no rows"
    return lines
