"""What it finds
An implicit-prompt pair (no `prompt` column) whose chosen and rejected do not share the prompt: they differ from
the first message on, differ in an earlier assistant turn, or one side stops before its reply, so TRL's prompt
extraction cuts in the wrong place.

Why it matters for training
TRL takes the prompt to be the longest common leading part. Conversations that share no leading message give an
empty prompt, and the trainer then raises for the whole dataset; a side without a reply moves the last shared
(user) message into both completions, so the model is trained to write the user's turn; so does an earlier
assistant turn that differs (the prompt stops before it, and the user turns after it become reply).

Example
chosen `[user "Who wrote 'Pride and Prejudice'?", assistant ...]`, rejected `[user "Who wrote Pride and
Prejudice?", assistant ...]`: the user turns differ by two quotes.

Fix
Give both sides the same prompt messages, or write the prompt into an explicit `prompt` column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "error"
SUBJECT = "pair"
PROMPT_ROLES = ("user", "system")  # roles that belong to a prompt, never to a reply


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if pair.refused is not None:
        yield Hit(pair.refused, "give chosen and rejected the same prompt messages, or a prompt column", pair.location())
        return
    if not pair.ok or not setup.implicit or not setup.conversational:
        return
    for side, reply in pair.replies.items():
        roles = [m.get("role") for m in reply]
        if not roles or roles[0] != "assistant":
            what = "nothing" if not roles else f"a {roles[0]} message"
            yield Hit(f"the extracted {side} reply starts with {what}, not an assistant message: the prompt TRL "
                      "extracts is not the shared prompt", "give both sides the same prompt and one reply each",
                      pair.location(side))
            continue
        later = next((i for i, role in enumerate(roles) if i and role in PROMPT_ROLES), None)
        if later is not None:
            yield Hit(f"the extracted {side} reply holds a {roles[later]} message (its message {later}): chosen and "
                      "rejected differ in an earlier assistant turn, so TRL's prompt stops before it and the "
                      f"{roles[later]} turn is trained as part of the reply",
                      "give both sides the same earlier turns (only the last reply differs), or a prompt column",
                      pair.location(side))
