"""What it finds
Message content holding the literal text of a special token (e.g. `<|im_end|>`, `</s>`,
`<|eot_id|>`) that the tokenizer turns into the special id.

Why it matters for training
The text becomes a real control token in the middle of a message: the model learns to end turns, or
open fake ones, inside content, and a user can inject turn boundaries at inference.

Example
A scraped answer that quotes a chat transcript: `... the model printed <|im_end|> and stopped`.

Fix
Remove or escape the literal from the data, or tokenize content with special-token parsing off
(`split_special_tokens=True`).
"""

from __future__ import annotations

from collections.abc import Iterator

from mldebug_cli.core.findings import Hit
from mldebug_cli.render.masking import content_text

SEVERITY = "warning"
SUBJECT = "row"


def run(row, setup) -> Iterator[Hit]:
    if row.problem is not None or setup.special_pattern is None:
        return
    for i, message in enumerate(row.messages):
        found = setup.special_pattern.search(content_text(message.get("content")))
        if found:
            yield Hit(
                f"message {i} ({message.get('role')}) contains the special token text {found.group(0)!r},"
                " which the tokenizer turns into the special id",
                "remove or escape special-token text in content",
                row.location(i),
            )
            return
