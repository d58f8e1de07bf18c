"""What it finds
A setting of the training framework whose effect on the rows mldebug does not reproduce: the ids and
labels shown may differ from what the framework trains on. One finding per setting, at its config key.

Why it matters for training
mldebug's other data checks are only as true as its copy of the framework's data code. Where the copy
is incomplete, a clean report is not evidence that the trainer sees clean rows.

Example
LLaMA-Factory with `packing: true` concatenates rows into blocks of `cutoff_len`; mldebug shows every
row on its own (their ids and labels are LLaMA-Factory's, the packed sequences are not shown).
A multimodal template (`gemma3`, `mistral_small`) expands image placeholders mldebug leaves as text.

Fix
Nothing in the data: read the affected checks with care, or compare a few rows with the framework's
own preprocessing (LLaMA-Factory: `llamafactory-cli train ... --max_samples 4` prints the first example).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Setup

SEVERITY = "warning"
SUBJECT = "setup"


def run(setup: Setup, ctx: Setup) -> Iterator[Hit]:
    for gap in setup.facts.not_emulated:
        yield Hit(f"{gap.message}: the ids and labels shown may differ from what {setup.framework} trains on",
                  "treat the data checks as approximate for this setting",
                  Location(path=gap.path, line=gap.line, key=gap.key) if gap.path else setup.location())
