"""Where two runs' curves part (`check-run RUN --compare OTHER`): loss, eval loss, grad norm or learning rate.

What it finds
    For each metric both runs log, the first point (step; tokens seen with ``--align tokens``; seconds since each
    run's first logged step with ``--align time``, where W&B, TensorBoard or MLflow stamped the steps; the logged
    ``epoch``, the share of the training set seen, with ``--align samples``) from which the
    two curves stay apart for at least 3 points in a row: a relative difference above 10% for the losses, 50% for
    the grad norm (it is noisy step to step) and 1% for the learning rate (the same config gives the same schedule,
    so any gap is a setting). The thresholds are mldebug's: the guides say to compare runs on the same token set and
    axis, not by how much. This is information about the pair of runs, not a fault of either.

Why it matters for training
    "What changed?" is answered by where the curves part: a learning-rate gap from step 1 is a schedule or warmup
    setting; a loss that parts late, with the same LR, is the data order, a bad batch or numerics; a grad norm that
    parts first often announces the loss. Comparing by step runs with another batch size or packing compares
    different amounts of data: ``--align tokens`` puts them on the tokens seen, ``--align samples`` on the rows seen
    (same dataset); ``--align time`` asks what each setup reaches in the same hours (the folklore's "against tokens
    or wall-clock").

Example
    ``loss: the runs part at step 120 (1.21 vs 1.62, 34% apart) and stay apart to step 400 (0.82 vs 1.35)``.

Fix
    Nothing to fix by itself: diff the two configs for the setting that explains the first metric to part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt
from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.sources.runlog.compare import RunComparison

SEVERITY = "info"
SUBJECT = "comparison"
THRESHOLDS = {"loss": 0.1, "eval_loss": 0.1, "grad_norm": 0.5, "learning_rate": 0.01, "min_points": 3}


def run(pair: RunComparison, ctx: object) -> Iterator[Hit]:
    for aligned in pair.metrics:
        apart = [_relative(a, b) > THRESHOLDS[aligned.metric] for _, a, b in aligned.points]
        start = _first_run(apart, int(THRESHOLDS["min_points"]))
        if start is None:
            continue
        x, a, b = aligned.points[start]
        xe, ae, be = aligned.points[-1]
        yield Hit(
            f"{aligned.metric}: the runs part at {pair.where(x)} ({fmt(a)} vs {fmt(b)}, {_relative(a, b):.0%} apart) "
            f"and end at {pair.where(xe)} at {fmt(ae)} vs {fmt(be)}",
            "diff the two configs for the setting that explains the first metric to part" +
            ("; with other batch sizes or packing, compare with --align tokens" if pair.axis == "step" else ""),
            Location(path=pair.other, key=aligned.metric, step=int(x) if pair.axis == "step" else None),
        )


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def _first_run(flags: list[bool], length: int) -> int | None:
    """The first index of ``length`` True values in a row; with fewer points than that, 0 when every one is True."""
    if len(flags) < length:
        return 0 if flags and all(flags) else None
    count = 0
    for i, flag in enumerate(flags):
        count = count + 1 if flag else 0
        if count == length:
            return i - length + 1
    return None
