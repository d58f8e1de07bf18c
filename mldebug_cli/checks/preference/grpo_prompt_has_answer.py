"""What it finds
A GRPO prompt whose last message is an assistant turn: the answer is already in the prompt.

Why it matters for training
GRPOTrainer does not refuse it: it renders the prompt with a new generation prompt after the assistant turn (or,
with templates that ignore the generation prompt such as Mistral-Nemo's, samples straight after the answer). The
model is rewarded for repeating what it was shown, and the rewards stop measuring anything.

Example
`"prompt": [{"role": "user", "content": "What is 15% of 80?"}, {"role": "assistant", "content": "12."}]`

Fix
End every prompt with the user (or tool) turn the model should answer; keep the answer in a reward column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or setup.task != "grpo" or not setup.conversational:
        return
    if pair.prompt and pair.prompt[-1].get("role") == "assistant":
        yield Hit(f"the prompt ends with an assistant turn (message {len(pair.prompt) - 1}): generation starts "
                  "after the answer", "end the prompt with the turn to answer", Location(
                      path=pair.path, line=pair.line, row=pair.index, message_index=len(pair.prompt) - 1))
