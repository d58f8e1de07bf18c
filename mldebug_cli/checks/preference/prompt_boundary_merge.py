"""What it finds
A row whose prompt, tokenized alone, is not a token prefix of prompt+reply: the prompt's last token merges with
the reply's first (plain text: `"."` + `'"'` -> `'."'`, Qwen: `assistant\\n` + `"\\n..."`), or the template renders the
prompt differently without a reply (Mistral-Nemo drops the system message).

Why it matters for training
TRL 1.16 starts the completion where the two tokenizations diverge and leaves the prompt's remaining tokens out
of the sequence: the model is trained on a context it never sees at inference (a lost system message, a prompt
without its last token), and the reply's first token is trained as a merged token. TRL warns once for the run.
ORPO (legacy path) instead takes the prompt from each side's prompt+reply ids, so the merged token is trained
as the first completion token: the prompt's end is learnt as part of the reply.

Example
prompt `Complete the quotation: "To be or not to be.` with reply `" That is the question.`

Fix
End plain-text prompts on a token boundary (no trailing space; keep quotes with the reply or the prompt);
for chats, use a template that renders the prompt the same way alone and with a reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import show
from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.preference_subjects import Pair, PreferenceSetup

SEVERITY = "warning"
SUBJECT = "pair"


def run(pair: Pair, setup: PreferenceSetup) -> Iterator[Hit]:
    if not pair.ok or setup.task == "grpo" or pair.prompt_len >= len(pair.prompt_ids):
        return
    lost = pair.prompt_ids[pair.prompt_len:]
    text = setup.decode(lost)
    cause = "it merges with the reply's first token" if len(lost) == 1 else "the template renders it differently"
    effect = "ORPO trains the merged token as completion" if setup.task == "orpo" else "TRL leaves them out of training"
    yield Hit(f"the prompt's last {len(lost)} token(s) {show(text)} are not a prefix of prompt+reply ({cause}): "
              f"{effect}", "end the prompt on a token boundary, or use a template that "
              "renders the prompt alike with and without a reply", pair.location())
