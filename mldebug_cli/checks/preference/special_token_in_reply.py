"""What it finds
A reply (or KTO completion) whose text contains the literal text of a special token, such as `<|im_end|>` or
`</s>`, which TRL tokenizes as the special token itself.

Why it matters for training
The reply is cut short in the model's eyes: an end-of-turn in the middle of a chosen answer teaches the model to
stop there, and one in a rejected answer teaches it to avoid a token it must produce. TRL accepts it silently.

Example
`"content": "Use my_list.reverse().<|im_end|>"` with a Qwen tokenizer.

Fix
Remove the special-token text from the reply (a trailing plain-text EOS is fine: TRL keeps one).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.preference.common import reply_text, without_eos
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or setup.special_pattern is None:
        return
    eos = None if setup.conversational else setup.eos_text
    for side, reply in pair.replies.items():
        found = setup.special_pattern.search(without_eos(reply_text(reply), eos))
        if found:
            yield Hit(f"the {side} reply contains the special-token text {found.group()!r}, tokenized as the token "
                      "itself", "remove it from the reply", pair.location(side))
