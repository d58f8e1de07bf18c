"""Reward stuck at zero: in an RL run the mean reward stays at 0 for more than 20 steps.

What it finds
    GRPO/RLOO runs whose logged ``reward`` is exactly 0 over a stretch spanning more than 20 optimizer
    steps (axolotl's training-stability guide: rewards should pass 0.15 within 20 steps; 0 for more than 20
    steps means a broken reward function).

Why it matters for training
    With every completion scoring 0, every advantage is 0 and the policy gets no gradient: the run burns
    compute and changes nothing. Usual causes: the reward function never matches the completions' format
    (answer tags, JSON), it reads the wrong dataset column, or the completions are cut at
    ``max_completion_length`` before the answer.

Example
    ``steps 1-50: reward is 0 at all 50 logged points``.

Fix
    Call the reward function on a few real completions by hand; check the expected format and column;
    raise ``max_completion_length`` if completions are clipped (RN024); start from an SFT'd model that
    can produce the format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import hit, is_rl, runs_where

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "error"
SUBJECT = "run"
THRESHOLDS = {"max_steps_at_zero": 20}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    reward = subject.get("reward")
    if reward is None or not is_rl(subject):
        return
    for first, last in runs_where(reward, lambda v: v == 0.0):
        span = reward.steps[last] - reward.steps[first] + 1
        if span > ctx.limit("max_steps_at_zero"):
            yield hit(subject, reward, first, last,
                      f"reward is 0 at all {last - first + 1} logged points over {span} steps",
                      "call the reward function on real completions by hand (format, answer tags, dataset "
                      "column); check completions are not clipped (RN024)")
