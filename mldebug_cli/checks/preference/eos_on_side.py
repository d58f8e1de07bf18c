"""What it finds
A side whose completion (before truncation) does not end with an EOS/end-of-turn token, or ends with two of them.

Why it matters for training
TRL 1.16 appends the EOS text to plain-text replies only when the string does not already end with it, and adds
nothing to conversational ones (the template's end-of-turn is the end); its legacy ORPOTrainer appends the EOS id
to every reply that does not already end with it, so Qwen chats end `<|im_end|>\n<|im_end|>`. A reply that already carries `<eos>\\n`
gets a second EOS; a template that writes no end token leaves the model never learning to stop; when only one
side of a pair has it, the model learns to prefer (or avoid) stopping rather than the better answer.

Example
plain text `"chosen": "2 and 3.</s>\\n"` with Mistral: TRL appends another `</s>` after the newline. The original
Llama-3-Instruct template always opens a new assistant header after the last turn, so every completion ends
`<|eot_id|><|start_header_id|>assistant<|end_header_id|>` and the model is trained to continue past its stop.

What the template writes after every final assistant reply by design is not a finding: Phi-3's template ends each
conversation `<|end|>\\n<|endoftext|>` (end-of-turn, then EOS), the original Llama 3 template opens the next assistant
header after `<|eot_id|>`; a completion that ends exactly as the template closes every conversation is left alone
(its effect is the template's, the same in every row, for the template checks to judge). Only what the row adds
(EOS text in the reply, ORPO's appended EOS id) is reported.

Fix
Leave EOS out of the text (TRL adds it), or strip what follows it; for chats, use a template that closes the
assistant turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or not setup.stop_ids or setup.task == "grpo":
        return
    design = _tail(list(setup.template_closing), setup) if setup.template_closing else None
    for side in pair.joint_ids:
        ids = pair.completion_ids(side)
        tail = _tail(ids, setup)
        if not tail or tail == design:  # the template closes every conversation this way
            continue
        if tail[-1] not in setup.stop_ids:
            after = ", after its end-of-turn: tokens after it are trained too" if set(ids) & setup.stop_ids else \
                ", not an EOS/end-of-turn token: the model does not learn to stop"
            yield Hit(f"the {side} completion ends with {setup.decode(tail[-1:])!r}{after}",
                      "use a template that ends the conversation with the assistant's end-of-turn",
                      pair.location(side))
        elif len(tail) > 1 and tail[-2] in setup.stop_ids:
            hint = ("ORPO appends the EOS id after the template's end-of-turn: train with DPO's preparation, or a "
                    "template whose turns end with the EOS token" if setup.task == "orpo"
                    else "remove the EOS text from the reply: TRL appends it")
            yield Hit(f"the {side} completion ends with two EOS/end-of-turn tokens {setup.decode(tail[-2:])!r}",
                      hint, pair.location(side))


def _tail(ids: list[int], setup) -> list[int]:
    """The last two ids that are not whitespace-only text (stop ids always count), in order."""
    tail: list[int] = []
    for i in reversed(ids):
        if i in setup.stop_ids or setup.decode([i]).strip():
            tail.insert(0, i)
            if len(tail) == 2:
                break
    return tail
