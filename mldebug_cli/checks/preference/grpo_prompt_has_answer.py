"""What it finds
A GRPO prompt that already holds the answer: its last message is an assistant turn, an earlier assistant turn
says the answer column's value, or a user (or system) message ends with it.

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

import re
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
        return
    found = _answer_in_prompt(pair)
    if found is not None:
        column, index, where = found
        yield Hit(f"the prompt already holds the {column} column's value {pair.answers[column]!r}: {where} "
                  f"(message {index})", "keep the answer out of the prompt; the reward column alone should hold it",
                  Location(path=pair.path, line=pair.line, row=pair.index, message_index=index))


def _answer_in_prompt(pair: Pair) -> tuple[str, int, str] | None:
    """(answer column, message, how) when a prompt message gives the answer away: an earlier assistant turn that
    says it, or a user/system message that ends with it."""
    for column, answer in pair.answers.items():
        word = re.compile(rf"(?<![\w.]){re.escape(answer)}(?![\w]|\.\d)")
        for index, message in enumerate(pair.prompt or []):
            content = message.get("content") if isinstance(message, dict) else None
            if not isinstance(content, str):
                continue
            if message.get("role") == "assistant" and word.search(content):
                return column, index, "an earlier assistant turn says it"
            tail = content.rstrip().rstrip(".")
            if message.get("role") in ("user", "system") and tail.endswith(answer) and word.search(tail[-len(answer) - 1:]):
                return column, index, f"the {message['role']} message ends with it"
    return None
