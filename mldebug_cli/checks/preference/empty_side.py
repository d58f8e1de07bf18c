"""What it finds
A reply (chosen, rejected or a KTO completion) whose text is empty or whitespace only.

Why it matters for training
TRL accepts it without a word: an empty rejected reply is trivially easy to prefer against (the pair teaches
"say anything"), an empty chosen reply trains the model to stop at once, and a plain-text empty reply
becomes the EOS token alone.

Example
`"rejected": [{"role": "assistant", "content": ""}]`, or `"rejected": ""` in a plain-text pair.

Fix
Drop the row or fill the reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.preference.common import reply_text, without_eos
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "error"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok:
        return
    eos = None if setup.conversational else setup.eos_text
    for side, reply in pair.replies.items():
        calls = not isinstance(reply, str) and any(isinstance(m, dict) and m.get("tool_calls") for m in reply)
        if not without_eos(reply_text(reply), eos).strip() and not calls:  # a tool call is a reply
            yield Hit(f"the {side} reply is empty", "drop the row or fill the reply", pair.location(side))
