"""What it finds
A row that does not fit its task: chosen/rejected missing or of different kinds (text and messages), a KTO
label that is not true/false, messages without a role, a row that is text while the first row is messages, or a
chat template that raises on the row.

Why it matters for training
TRL decides the dataset's shape from its first row and maps every row the same way: a row of another shape makes
`dataset.map` raise mid-preparation, after the tokenizer and model have loaded. LLaMA-Factory's pairwise processor
(`--framework llama-factory`, stage dpo/orpo) instead drops a ranking row its converter refuses (turns out of
order, an even number of prompt turns) with only a log line: the row is reported dropped, and the run trains on
fewer pairs than the dataset holds.

Example
`{"prompt": "Q?", "chosen": [{"role": "assistant", "content": "A"}], "rejected": "B"}`

Fix
Give every row the same columns and kinds as the first.
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
    if pair.problem is not None:
        hint = ("fix the row's turn order, or drop it yourself so the count is known" if pair.left_out
                else "give every row the columns and kinds of the first row")
        yield Hit(pair.problem, hint, pair.location())
