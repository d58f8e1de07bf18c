"""Log irregular: duplicated or interleaved steps, steps going back, a truncated last record.

What it finds
    What the reader had to repair: steps logged twice (the last value is kept), steps going back (a
    resumed job replaying steps, or re-runs appended to one file), many back-and-forth jumps (two writers
    interleaved in one file, seen in LLaMA-Factory logs), a cut last record (a job killed while writing,
    or a W&B log copied while open), lines that are not records, steps taken from positions.

Why it matters for training
    The checks read the repaired series; the note tells you what the log looked like so that a curve in
    another tool (which may plot the replayed steps twice) is not misread.

Example
    ``steps go back from 1200 to 800 (line 341) in 'loss': a resumed or re-run job``.

Fix
    Nothing to fix in training; write each run to its own output folder so logs are not appended.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mldebug_cli.checks.run.common import run_hit

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mldebug_cli.checks.run.common import RunContext
    from mldebug_cli.core.findings import Hit
    from mldebug_cli.sources.runlog.model import Run

SEVERITY = "info"
SUBJECT = "run"
THRESHOLDS: dict[str, float] = {}


def run(subject: Run, ctx: RunContext) -> Iterator[Hit]:
    for note in subject.notes:
        yield run_hit(subject, note.message, "the series was repaired as described; no action needed for training",
                      line=note.line)
