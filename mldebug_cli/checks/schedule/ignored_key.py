"""A config key that has no effect in the framework version in use.

What it finds
    Keys the framework ignores or rejects, judged at the target transformers version (see CF003):
    ``warmup_ratio`` in transformers >= 5.15 (removed; ``HfArgumentParser`` rejects the file, and
    where extra keys are allowed the key is dropped), ``warmup_steps`` next to ``warmup_ratio`` in
    5.0-5.14 (the ratio replaces it), ``warmup_ratio`` next to ``warmup_steps`` in 4.x (the steps
    win) and in axolotl (which refuses the pair), a ``warmup_steps`` below 1 before 5.0 (a count),
    ``lr_scheduler_kwargs`` for ``constant``/``constant_with_warmup`` (get_scheduler passes them
    nothing), warmup for ``reduce_lr_on_plateau``/``greedy``, axolotl's ``cosine_min_lr_ratio``
    or ``lr_quadratic_warmup`` with a non-cosine scheduler, and a ratio set next to a step count.

Why it matters for training
    The run silently trains with a different schedule than the config describes: most often no
    warmup at all, or a cosine that decays to 0 instead of to the minimum you set.

Example
    ``warmup_ratio: 0.1`` with transformers 5.23: warmup is 0 and step 1 runs at the full LR.

Fix
    Use the key the installed version reads (``warmup_steps: 0.1``), or remove the key.
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.checks.schedule import at_key
from mldebug_cli.core.findings import Hit
from mldebug_cli.schedule.model import Simulation

SEVERITY = "error"
SUBJECT = "schedule"


def run(subject: Simulation, ctx: None) -> Iterator[Hit]:
    for ignored in subject.spec.ignored:
        yield Hit(message=ignored.reason, hint=ignored.hint, location=at_key(subject, ignored.key))
