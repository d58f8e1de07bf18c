"""The logged completions are degenerate: every completion of a prompt is the same text, or most are empty.

What it finds
    GRPO runs that kept their completions (TRL's ``log_completions: true`` writes
    ``<output_dir>/completions/completions_<step>.parquet``; mldebug reads the folder beside the run log): more than
    half of the prompt groups (at least 4) whose completions are all the same text, or more than half of all
    completions empty. axolotl's training-stability guide names both: "all completions become nearly identical"
    (entropy collapse) and "If completions are empty or incoherent, the model may be too weak for the task"; the
    share of one half is mldebug's.

Why it matters for training
    Identical completions score alike, so every advantage in the group is 0 and the prompt teaches nothing: the
    sampling has collapsed (temperature too low, entropy gone) or generation is greedy. Empty completions give the
    reward function nothing to score: a stop token the model emits at once, a chat template that ends the turn, or
    a model too weak for the task.

Example
    ``24 of 32 prompt groups (steps 1-8) have 4 identical completions, e.g. 'The answer is 4.'``

Fix
    Identical: raise the sampling ``temperature`` (0.8-1.0, the guide's range) and ``num_generations``, check that
    generation samples. Empty: look at the logged text, check the EOS and stop tokens and the template's generation
    prompt, or start from a model that can do the task (an SFT'd one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import show
from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.sources.runlog.completions import CompletionTables

SEVERITY = "warning"
SUBJECT = "completions"
THRESHOLDS = {"share": 0.5, "min_groups": 4}


def run(tables: CompletionTables, ctx: object) -> Iterator[Hit]:
    groups = [g for g in tables.groups if len(g.completions) >= 2]
    if len(groups) < THRESHOLDS["min_groups"]:
        return
    steps = f"steps {tables.groups[0].step}-{tables.groups[-1].step}"
    identical = [g for g in groups if len({c.strip() for c in g.completions}) == 1]
    if len(identical) > THRESHOLDS["share"] * len(groups):
        first = identical[0]
        yield Hit(
            f"{len(identical)} of {len(groups)} logged prompt groups ({steps}) have identical completions "
            f"(e.g. {len(first.completions)} times {show(first.completions[0])} at step {first.step}): their "
            "advantages are 0",
            "raise the sampling temperature (0.8-1.0) and num_generations; check that generation samples",
            Location(path=tables.path, step=first.step),
        )
    empty = [c for g in tables.groups for c in g.completions if not c.strip()]
    if len(empty) > THRESHOLDS["share"] * tables.completions:
        yield Hit(
            f"{len(empty)} of {tables.completions} logged completions ({steps}) are empty: the reward functions "
            "score nothing",
            "look at the logged text; check the EOS/stop tokens and the generation prompt, or start from a model "
            "that can do the task",
            Location(path=tables.path, step=tables.groups[0].step),
        )
