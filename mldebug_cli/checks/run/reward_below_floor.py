"""RL: after its first 20 steps the mean reward never reaches 0.15 (but is not stuck at 0).

What it finds
    GRPO/RL runs whose logged ``reward`` stays below 0.15 at every logged point after step 20 while it is not
    exactly 0 throughout (that is RN020): axolotl's training-stability guide
    (https://docs.axolotl.ai/docs/training_stability.html, "Key Metrics for RL (GRPO)") gives "> 0.15 within 20
    steps" as the healthy range for ``rewards/<name>/mean``. Needs at least 10 points after step 20.

Why it matters for training
    A reward that hovers just above 0 means almost no completion earns it: the task is too hard for the starting
    model, the reward function rarely matches the completions' format, or the completions are cut before the
    answer. Few groups then carry any advantage, and the run learns slowly or not at all.

Example
    ``reward`` between 0.01 and 0.08 from step 21 to 300.

Fix
    Call the reward function on real completions by hand; check the format it expects and that completions are
    not clipped (RN024); start from a model SFT'd on the format, or make the task easier (curriculum).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import after, fmt, hit, is_rl

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "warning"
SUBJECT = "run"
THRESHOLDS = {"min_reward": 0.15, "warmup_steps": 20, "min_points": 10}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    reward = subject.get("reward")
    if reward is None or not is_rl(subject):
        return
    start = after(reward, int(ctx.limit("warmup_steps")) + 1)
    values = [v for v in reward.values[start:] if v == v]
    if len(values) < ctx.limit("min_points") or all(v == 0 for v in values):
        return
    if max(values) >= ctx.limit("min_reward"):
        return
    yield hit(subject, reward, start, len(reward) - 1,
              f"after step {int(ctx.limit('warmup_steps'))} the reward stays below {ctx.limit('min_reward'):g} at all "
              f"{len(values)} logged points (highest {fmt(max(values))}): few completions earn it",
              "call the reward function on real completions by hand (format, answer tags); check completions are "
              "not clipped (RN024); start from a model SFT'd on the format")
