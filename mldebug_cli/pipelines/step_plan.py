"""One step plan for every command: the optimizer-step count of a config over its data, as ``lr-plot``,
``preflight``, ``memory``, ``probe`` and the ``--trainer-state`` overlay print it.

The rows come from one measurement (the config's datasets read as its framework reads them: rows per dataset, so
LLaMA-Factory's ``max_samples`` caps each dataset on its own; rows the framework drops for length left out; the
token length of every row that trains, so a packer's sequences are counted from them) and the count from one
arithmetic (``schedule.arithmetic.plan_steps``, which the batch plan's ``BatchPlan`` equals on HF Trainer runs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Report
from mldebug_cli.core.numbers import plural
from mldebug_cli.core.sections.pairs import data_summary
from mldebug_cli.schedule.dataset_size import DatasetSize
from mldebug_cli.schedule.model import StepPlan

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework


@dataclass(frozen=True)
class StepCount:
    """A config's optimizer steps and what they were counted from."""

    plan: StepPlan
    rows_from: str  # "the config's datasets: 20 + 30", "--num-rows", ...

    def describe(self) -> str:
        """``5 (over 40 training samples; rows from the config's datasets: 40)``: the count first."""
        plan = self.plan
        parts = [] if plan.train_rows is None else [f"over {plural(plan.train_rows, 'training sample')}"]
        if plan.total_steps_range is not None:
            low, high = plan.total_steps_range
            parts.append(f"packing estimate {'at most ' if low is None else f'{low}-'}{high}")
        parts.append(f"rows from {self.rows_from}")
        return f"{plan.total_steps:,} ({'; '.join(parts)})"


def size_from_reports(reports: Iterable[Report]) -> DatasetSize | None:
    """What inspect-data measured on each of a config's datasets, for the step count: rows per dataset less the
    rows the framework drops for length, and the token length of every row (for packing); scaled up from a
    sample."""
    per_dataset: list[int] = []
    loaded: list[int] = []  # rows each loader reads: the file, or its first max_samples rows (inspect checks those)
    kept_rows: list[tuple[int, ...]] = []
    tokens, exact = 0.0, True
    lengths: Counter[int] = Counter()
    untrained: Counter[int] = Counter()
    for report in reports:
        summary = data_summary(report.summary)
        rows, checked = summary.rows, summary.rows_checked
        scale = rows / checked if checked else 0.0
        exact = exact and checked == rows
        trained = rows * summary.sequences_per_row  # KTO unpairs each chosen/rejected row into two
        per_dataset.append(trained - round(summary.rows_dropped * scale))
        loaded.append(trained)
        tokens += summary.tokens_kept * scale
        lengths.update(scaled_counts(summary.lengths_kept, scale, per_dataset[-1] if trained == rows else None))
        untrained.update(scaled_counts(summary.lengths_untrained, scale))
        sequences = report.details.get("sequence_lengths") if checked == rows and trained == rows else None
        if sequences is not None:
            kept_rows.append(tuple(int(entry[0]) for entry in sequences))  # (row, lengths, trained[, images])
    if not sum(per_dataset) and not sum(loaded):
        return None
    basis = f"{round(tokens)} tokens of the rows that train, " + (
        "counted" if exact else "scaled up from the rows checked")
    return DatasetSize(rows=sum(per_dataset), source="the config's datasets: " + " + ".join(map(str, per_dataset)),
                       token_range=(round(tokens), round(tokens)), tokens_exact=exact, per_dataset=tuple(per_dataset),
                       token_basis=basis, lengths=tuple(sorted((+lengths).items())),
                       untrained_lengths=tuple(sorted((+untrained).items())),
                       kept_rows=tuple(kept_rows) if len(kept_rows) == len(per_dataset) else (),
                       loaded=tuple(loaded))


def scaled_counts(counts, scale: float, total: int | None = None) -> dict[int, int]:
    """(length, rows) counts scaled from the rows checked to the file, rounded so they add up to ``total`` (default:
    the scaled sum, rounded): largest remainders first, so 200 rows checked of 999 give 999 rows, not 1,000."""
    counts = list(counts)
    exact = [(length, n * scale) for length, n in counts]
    want = round(sum(x for _, x in exact)) if total is None else total
    out = {length: int(x) for length, x in exact}
    by_remainder = sorted(exact, key=lambda item: item[1] - int(item[1]), reverse=True)
    for length, _ in by_remainder[: max(0, want - sum(out.values()))]:
        out[length] += 1
    return {length: n for length, n in out.items() if n}


def count_steps(config_path: str, size: DatasetSize | None, *, framework: str | Framework | None = None, world_size: int = 1,
                target_versions: Mapping[str, str | None] | None = None,
                configured_versions: Mapping[str, str] | None = None, task: str | None = None) -> StepCount:
    """The optimizer steps of ``config_path`` over ``size`` (None: only ``max_steps`` can say), read as its framework
    reads the config and counted as lr-plot counts them."""
    from mldebug_cli.frameworks import versions
    from mldebug_cli.frameworks.selector import read_spec
    from mldebug_cli.schedule.arithmetic import plan_steps
    from mldebug_cli.sources.config_file import load_config

    config = load_config(config_path)
    targets = versions.resolve(config_path, target_versions, configured_versions)
    spec = read_spec(config, framework, world_size, targets, task)
    return StepCount(plan_steps(spec, size), "max_steps" if size is None else size.source)
