"""Whether two runs' final eval losses differ by more than their own noise (`check-run RUN --compare OTHER`).

What it finds
    The difference between the two runs' eval losses at the last point both cover (by step, tokens seen with
    ``--align tokens``, wall-clock time with ``--align time``, epochs of the data seen with ``--align samples``), set against the noise of each run's eval loss: the
    standard deviation of the changes between its last 5 evaluations (at least 3 evaluations each). A difference
    under twice the larger of the two is reported as within noise, above it as a real difference. Twice the
    standard deviation (about a 95% band for a normal scatter) is mldebug's rule; the folklore guide asks "is the eval
    difference within noise" without a number. This is information about the pair, never a fault.

Why it matters for training
    Two runs of the same recipe never end at the same eval loss: the data order, dropout and numerics move it. A
    setting "won" only when the gap is larger than that scatter; a smaller gap is a coin toss that a rerun with
    another seed may reverse.

Example
    ``eval_loss at step 400, the last both runs cover: 1.284 vs 1.297 (0.013 apart): within noise (each run's eval loss moves by up to 0.021 between
    evaluations)``.

Fix
    Nothing to fix; for a closer call, evaluate on more rows or compare several seeds of each setting.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt
from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.sources.runlog.compare import RunComparison

SEVERITY = "info"
SUBJECT = "comparison"
THRESHOLDS = {"min_evals": 3, "last_evals": 5, "sigmas": 2.0}


def run(pair: RunComparison, ctx: object) -> Iterator[Hit]:
    if min(len(pair.first_eval), len(pair.other_eval)) < THRESHOLDS["min_evals"]:
        return
    aligned = next((m for m in pair.metrics if m.metric == "eval_loss"), None)
    if aligned is None:
        return
    x, a, b = aligned.points[-1]  # the last eval both runs cover (the other run's value interpolated there)
    noise = max(_scatter(pair.first_eval), _scatter(pair.other_eval))
    gap = abs(a - b)
    within = gap < THRESHOLDS["sigmas"] * noise
    verdict = "within noise" if within else "beyond noise"
    yield Hit(
        f"eval_loss at {pair.where(x)}, the last both runs cover: {fmt(a)} vs {fmt(b)} ({fmt(gap)} apart): "
        f"{verdict} (each run's eval loss scatters by "
        f"{fmt(noise)} between its last evaluations; {THRESHOLDS['sigmas']:g} times that is the bar)",
        "compare several seeds of each setting, or evaluate on more rows, before calling a winner" if within
        else "the gap is larger than either run's own scatter: a real difference on this eval set",
        Location(path=pair.other, key="eval_loss"),
    )


def _scatter(evals: tuple[float, ...]) -> float:
    last = evals[-int(THRESHOLDS["last_evals"]):]
    changes = [b - a for a, b in zip(last, last[1:])]
    return statistics.pstdev(changes) if len(changes) > 1 else abs(changes[0]) if changes else 0.0
