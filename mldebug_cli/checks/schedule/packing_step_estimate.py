"""Sample packing is on: the step count rests on an estimate.

What it finds
    Runs with packing (TRL ``packing``, axolotl ``sample_packing``, LLaMA-Factory ``packing`` /
    ``neat_packing`` or the pt stage, torchtune ``dataset.packed``) whose step count depends on
    how many packed sequences the rows make. The message gives the range of T.

Why it matters for training
    Packing merges rows into sequences of the maximum length, so the number of rows no longer
    sets the number of batches; warmup counts and schedules sized from the row count are off by
    the packing factor (often 3-10x).

Example
    10,000 chat rows of ~400 tokens packed into 4,096-token sequences: about 1,000 packed rows,
    not 10,000.

Fix
    Pass ``--dataset`` with tokenized rows (``input_ids``) for an exact token count, or take T from
    a short dry run's logged ``max_steps``; size warmup as a ratio. ``preflight`` packs the real
    token length of every row it checked: TRL's best-fit-decreasing packing of every row (``--all``,
    up to 1,000 rows) is exact and raises no finding.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.core.numbers import plural
from mldebug_cli.schedule.model import Simulation

SEVERITY = "warning"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    spec, plan = subject.spec, subject.plan
    if not spec.packing.enabled or plan.total_steps_range is None or plan.packed_rows_range is None:
        return
    low, high = plan.total_steps_range
    rows_low, rows_high = plan.packed_rows_range
    if low is None:
        span = f"at most {plural(high, 'optimizer step')} (if no rows pack together), fewer by the packing factor"
        rows = f"at most {plural(rows_high, 'packed row')}"
    elif low == high:
        span = f"{plural(high, 'optimizer step')} if the framework packs as tightly"
        rows = plural(rows_high, "packed row")
    else:
        span = f"between {low} and {high} optimizer steps"
        rows = f"{rows_low} to {plural(rows_high, 'packed row')}"
    yield Hit(
        message=(
            f"packing is on, so the step count is an estimate: T = {plan.total_steps} simulated, "
            f"{span} ({rows}, from {plan.packing_basis})"
        ),
        hint="pass --dataset with tokenized rows (input_ids) for an exact token count",
        location=at_key(subject, spec.key("packing"), spec.packing.key),
    )
