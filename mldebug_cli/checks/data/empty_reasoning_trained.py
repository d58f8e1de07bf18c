"""What it finds
A trained assistant turn that carries no reasoning of its own (no ``reasoning_content``/``thinking``/``reasoning``
field, no ``<think>`` in its content) into whose trained tokens the chat template writes an empty thinking block
(``<think>`` and ``</think>`` with only whitespace between them). Read from the real render and the row's labels.

Why it matters for training
A thinking model's template marks "no reasoning" with an empty block: Qwen3's renders ``<think>\\n\\n</think>\\n\\n``
before the answer of the last assistant turn whenever the message has no ``reasoning_content``. Trained on those
tokens, the model learns to close the block at once and answer without thinking; a dataset that mixes rows with
and without reasoning trains both modes, in the share of its rows. The finding count against the rows checked is
that share.

Example
``{"messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]}`` with Qwen3's
template: ``<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n4<|im_end|>``, every token of it trained.

Fix
To train reasoning, give these turns their trace (``reasoning_content``, or a ``<think>`` block in the content);
to train a non-thinking model on purpose, nothing: the empty block is how Qwen3 asks for that mode. Keep the
share of rows with reasoning what you mean the model to do.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.data.common import REASONING_KEYS, THINK_OPEN
from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "info"
SUBJECT = "row"
EMPTY_BLOCK = re.compile(r"<think>\s*</think>")
IGNORED = -100


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if not row.ok or not row.text or not row.labels or THINK_OPEN not in row.text:
        return
    offsets = row.offsets
    if not offsets:
        return
    for block in EMPTY_BLOCK.finditer(row.text):
        trained = [p for p, (start, end) in enumerate(offsets[:len(row.labels)])
                   if start < block.end() and end > block.start() and row.labels[p] != IGNORED]
        if not trained:
            continue
        message = _message_at(row, trained[0])
        if message is None or _has_reasoning(row.messages[message]):
            continue
        yield Hit(f"assistant message {message} has no reasoning, and the template writes an empty thinking block "
                  f"({len(trained)} trained tokens) before its answer: the model learns to answer without thinking",
                  "give the turn its reasoning (reasoning_content or a <think> block) to train thinking; on purpose "
                  "for a non-thinking model",
                  row.location(message))
        return


def _message_at(row: Row, position: int) -> int | None:
    """The assistant message whose turn holds token ``position``: the located turns, else the last assistant one."""
    for turn in row.turns:
        if turn.start <= position < turn.end:
            return turn.message_index
    assistants = [i for i, m in enumerate(row.messages) if isinstance(m, dict) and m.get("role") == "assistant"]
    return assistants[-1] if assistants and not row.turns else None


def _has_reasoning(message) -> bool:
    if not isinstance(message, dict):
        return True
    if any(isinstance(value, str) and value.strip() for value in (message.get(k) for k in REASONING_KEYS)):
        return True
    return THINK_OPEN in content_text(message.get("content"))
