"""``check-run --config``: the dataset rows behind each step a spike, non-finite value or outlier finding names,
replayed by the batch plan from the config's sampler settings and its (first) dataset."""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.findings import Finding
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.runlog import RowAt, StepRows
from mldebug_cli.schedule.batch_plan import PreparedPlan

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework

BATCH_CODES = (Code.NON_FINITE_VALUES, Code.LOSS_SPIKE, Code.GRAD_NORM_SPIKE)  # the findings whose steps get their rows
MAX_STEPS_PER_FINDING = 8  # a loss logged every k steps averages k steps: at most this many are named


def rows_behind(findings: Sequence[Finding], run, config_path: str, world_size: int = 1,
                framework: Callable[[], Framework] | None = None) -> tuple[tuple[StepRows, ...], str]:
    """The rows of each flagged step and a context line saying where they come from (or why they could not be);
    ``framework``: the config's, detected once by the caller (None: detected here)."""
    from mldebug_cli.frameworks.sampling import batch_plan
    from mldebug_cli.frameworks.selector import detected, read_plan, read_trainer_facts
    from mldebug_cli.sources.config_file import load_config
    from mldebug_cli.sources.shards import open_dataset

    wanted = list(dict.fromkeys((f.code, s) for f in findings if f.code in BATCH_CODES for s in _steps(f, run)))
    if not wanted:
        return (), "no finding names a step to replay"
    prepared = None
    try:
        config = load_config(config_path)
        owner = framework() if framework is not None else detected(config)
        training = read_plan(config, owner)
        if not training.datasets:
            raise InputError(f"{config_path}: the config names no dataset")
        dataset = training.datasets[0]
        source = open_dataset(dataset.spec, dataset.split)
        if owner.prepared_plan is not None:
            prepared = _prepared(owner, config_path, world_size)
            plan = prepared.plan
        else:
            plan = batch_plan(read_trainer_facts(config_path, owner, world_size), len(source), config_path)
    except InputError as exc:
        return (), f"rows not named: {exc.message}"
    steps = {s: plan.step(s) for _, s in wanted}

    def file_rows(batch: Sequence[int]) -> Sequence[int]:
        return prepared.file_rows(batch) if prepared is not None else batch

    rows = sorted({r for step in steps.values() if step for r in file_rows(step.rows)})
    lines = {record.index: record.line for record in source.records(rows, parse=False)} if rows else {}
    found = []
    for code, number in wanted:
        step = steps[number]
        if step is None:
            continue
        found.append(StepRows(code, number, step.epoch, tuple(
            RowAt(row, lines.get(row), rank, index) for rank, batches in enumerate(step.micro_batches)
            for index, batch in enumerate(batches) for row in file_rows(batch))))
    preparation = f"{prepared.preparation}; then " if prepared is not None else ""
    return tuple(found), f"{dataset.spec}: {preparation}{plan.settings.describe()}; {plan.total_steps:,} optimizer steps"


_PREPARED: dict[tuple[str, str, int, int], PreparedPlan] = {}


def _prepared(owner: Framework, config_path: str, world_size: int) -> PreparedPlan:
    """The plan of a framework that prepares its rows before its sampler (axolotl): every row of the config's dataset
    encoded as mldebug's inspect-data does for the config, then that preparation and sampler replayed over them. Kept
    per (framework, config and its modification time, world size): ``--watch`` rebuilds the report each poll."""
    key = (owner.name, config_path, _modified(config_path), world_size)
    if key not in _PREPARED:
        if len(_PREPARED) >= 4:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[key] = _encoded_plan(owner, config_path, world_size)
    return _PREPARED[key]


def _modified(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _encoded_plan(owner: Framework, config_path: str, world_size: int) -> PreparedPlan:
    from mldebug_cli.pipelines.batch_step import plan_of_rows
    from mldebug_cli.pipelines.preflight import encoded_lengths

    lengths = encoded_lengths(config_path, owner)
    if lengths.not_read is not None:
        raise InputError(f"{owner.name} prepares every row before its sampler, and the rows were not read: "
                         f"{lengths.not_read}")
    kept = [(row, sizes[0], trained) for row, sizes, trained in lengths.rows]
    return plan_of_rows(owner, config_path, world_size, kept, lengths.total or len(kept), lengths.failed)


def _steps(finding: Finding, run) -> list[int]:
    """The optimizer steps behind a finding's range: a loss value logged at step s averages every step since the
    previous log of it (``logging_steps``); other series are logged for their step alone. For RN002 the step
    before the first non-finite value is added (the batches before a NaN)."""
    first = finding.location.step
    if first is None:
        return []
    last = finding.location.step_end if finding.location.step_end is not None else first
    series = run.get(finding.location.key) if finding.location.key == "loss" else None
    start = first - 1 if finding.code == Code.NON_FINITE_VALUES else first
    if series is not None:
        at = bisect_left(series.steps, first)
        if 0 < at < len(series.steps) and series.steps[at] == first:
            start = min(start, series.steps[at - 1] + 1)
    return list(range(max(start, 1), last + 1))[:MAX_STEPS_PER_FINDING]
