"""What it finds
A pair whose chosen and rejected completions are the same tokens after TRL prepares them.

Why it matters for training
DPO's loss depends on the difference between the two log-probabilities: for identical sides it is a constant
(ln 2 at the start) with zero gradient, so the pair costs compute and teaches nothing; a set full of them
flattens the loss at 0.693. ORPO's odds-ratio term is likewise zero for the pair, and KTO (which unpairs the rows)
trains the same completion once as desirable and once as undesirable. Identical pairs usually come from a generation step that sampled the same answer
twice, or a join on the wrong key.

Example
`{"prompt": [...], "chosen": [{"role": "assistant", "content": "Yes, 17 is prime."}], "rejected": [the same]}`

Fix
Drop the pair, or regenerate the rejected answer.
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
    if not pair.ok or set(pair.sides) != {"chosen", "rejected"} or pair.dropped:
        return
    chosen = pair.completion_ids("chosen")
    if chosen == pair.completion_ids("rejected"):
        yield Hit(f"chosen and rejected are the same {len(chosen)} tokens: the pair has no gradient",
                  "drop the pair or regenerate the rejected answer", pair.location("rejected"))
