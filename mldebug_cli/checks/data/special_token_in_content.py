"""What it finds
Message content holding the literal text of a special token (e.g. `<|im_end|>`, `</s>`, `[INST]`,
`<|eot_id|>`) that the tokenizer turns into the special id. Every such text in every message of the row
is reported: an error when it lies in trained content (the labels teach it), a warning when it lies in
masked content (the model reads it but is not trained to write it).

Why it matters for training
The text becomes a real control token in the middle of a message. Trained, it teaches the model to end
turns, or open fake ones, inside an answer: `</s>` in a trained reply teaches it to stop mid-answer.
Masked, the model still learns from prompts with turn boundaries where there are none, and a user can
inject turn boundaries at inference.

Example
A scraped answer that quotes a chat transcript: `... the model printed <|im_end|> and stopped` (error:
the answer is trained); a user message that pastes `[INST]` (warning: masked).

Fix
Remove or escape the literal from the data, or tokenize content with special-token parsing off
(`split_special_tokens=True`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Severity
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.masking import content_text

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "error"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    if row.problem is not None or setup.special_pattern is None:
        return
    cursor = 0
    for i, message in enumerate(row.messages):
        content = content_text(message.get("content"))
        found = list(setup.special_pattern.finditer(content))
        start = row.text.find(content.strip(), cursor) if row.text and content.strip() else -1
        if start >= 0:
            start -= len(content) - len(content.lstrip())  # where the unstripped content would begin
            cursor = start + len(content)
        if not found:
            continue
        trained = [_trained(row, start + m.start(), message) if start >= 0 else _by_role(row, message) for m in found]
        texts = list(dict.fromkeys(m.group(0) for m in found))
        shown = ", ".join(map(repr, texts))
        role = message.get("role")
        if any(trained):
            yield Hit(
                f"the {role} message contains the special token text {shown} in trained content: the tokenizer turns it into "
                "the special id and the labels teach it mid-message",
                "remove or escape special-token text in content",
                row.location(i),
                severity=Severity.ERROR,
            )
        else:
            yield Hit(
                f"the {role} message contains the special token text {shown} (masked): the tokenizer turns it into "
                "the special id",
                "remove or escape special-token text in content",
                row.location(i),
                severity=Severity.WARNING,
            )


def _trained(row, position: int, message) -> bool:
    """Whether the token covering character ``position`` of the rendered text has a trained label."""
    offsets, labels = row.offsets, row.labels
    if offsets and len(offsets) <= len(labels):
        for index, (s, e) in enumerate(offsets):
            if s <= position < e:
                return labels[index] != IGNORE_INDEX
        return False  # cut by truncation: not trained
    if row.layout is not None:
        return any(s <= position < e for s, e in row.layout.trained_spans)
    return _by_role(row, message)


def _by_role(row, message) -> bool:
    """Without a located render: content counts as trained when the row trains anything of its role."""
    return message.get("role") == "assistant" and row.trained > 0
