"""A reward function that never tells completions apart: its per-function std is 0 at every logged step.

What it finds
    GRPO runs that log each reward function (TRL: ``rewards/<name>/mean`` and ``rewards/<name>/std``) where one
    function's std is 0 at every logged point (at least 5 points) while it returns something other than 0: it gives
    every completion of a batch the same score, a constant such as a format check that always passes. axolotl's
    training-stability guide gives ``reward_std > 0 on most steps`` as healthy and "Always 0 -- no learning signal
    (all completions get the same reward)" as the red flag, and says to test the reward function standalone. A
    function stuck at 0 is RN020's; the aggregate ``reward_std`` is RN021's, which another, varying function can hide.

Why it matters for training
    GRPO's advantage is each completion's reward minus its group's mean: a constant adds the same amount to every
    completion and cancels out. The function costs its compute (and its weight in ``reward_weights``) and teaches
    nothing; usually it is a bug (a regex that matches everything, a try/except returning a default, a column that
    is always present).

Example
    ``rewards/format_reward/std is 0 at all 8 logged points (mean 1 at every step)``.

Fix
    Call the function by hand on a few real completions, good and bad (``log_completions: true`` keeps them); fix
    it so that it separates them, or drop it from ``reward_funcs``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import fmt, hit, is_rl

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_points": 5}
_STD = re.compile(r"^rewards/(?P<name>.+)/std$")


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    if not is_rl(subject):
        return
    stds = {m.group("name"): (s, [v for v in s.values if math.isfinite(v)])
            for key in sorted(subject.series) if (m := _STD.match(key)) and (s := subject.get(key)) is not None}
    varying = [name for name, (_, values) in stds.items() if sum(v > 0 for v in values) > len(values) / 2]
    for name, (std, values) in stds.items():
        if len(values) < ctx.limit("min_points") or any(v != 0.0 for v in values) or not varying:
            continue
        means = subject.get(f"rewards/{name}/mean")
        logged = sorted({v for v in means.values if math.isfinite(v)}) if means is not None else []
        if logged == [0.0]:
            continue  # always 0: RN020's finding
        what = f"mean {fmt(logged[0])} at every step" if len(logged) == 1 else \
            f"mean from {fmt(logged[0])} to {fmt(logged[-1])}" if logged else "its mean not logged"
        yield hit(subject, std, 0, len(std) - 1,
                  f"reward function {name!r} gives every completion the same score: rewards/{name}/std is 0 at all "
                  f"{len(values)} logged points ({what}) while {varying[0]!r} varies: it adds nothing to the advantages",
                  f"call {name} by hand on good and bad completions (log_completions keeps them) and fix it so it "
                  "separates them, or drop it from reward_funcs")
