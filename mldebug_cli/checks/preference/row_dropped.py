"""What it finds
A row the trainer drops: its prompt alone fills `max_length` (DPO with `truncation_mode="keep_start"`, KTO always;
for KTO on chosen/rejected pairs, each of the two rows it makes of a pair is filtered on its own).

Why it matters for training
TRL 1.16 filters such rows out of the dataset without a warning or a count: the run trains on fewer rows than the
dataset holds, and the longest prompts (often the hardest examples) are the ones that vanish.

Example
`max_length=48` and a 57-token question: the row is gone from `trainer.train_dataset`.

Fix
Raise `max_length`, shorten the prompt, or drop the row yourself so the count is known.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "error"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or not pair.dropped:
        return
    what = "the row"
    if setup.unpaired:
        what = ("both rows KTO makes of the pair" if len(pair.dropped_sides) == 2
                else f"the {next(iter(pair.dropped_sides))} row KTO makes of the pair")
    yield Hit(f"the prompt alone has {pair.prompt_len} tokens, reaching max_length {setup.max_length}: "
              f"TRL drops {what} without a warning", "raise max_length or shorten the prompt", pair.location())
