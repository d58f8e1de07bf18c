"""What it finds
A user or system message whose text contains the assistant header as the template writes it after its special
tokens (ChatML: `assistant` and a newline).

Why it matters for training
Fine-tuning code that finds the assistant span by matching that text or its ids (Qwen3-VL's fine-tuning code before
its PR #2027) starts the trained span inside the user's words: the model learns the rest of the prompt as its
answer. TRL's vision collator trains every token and is not misled; the finding marks the rows such code mistrains.

Example
A user message `Please reply as\nassistant\nwith one word` under the Qwen2-VL template.

Fix
Mask by the template's `{% generation %}` markers or by the rendered turn boundaries, not by searching for the
header text; or reword the row.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit, Location

if TYPE_CHECKING:
    from mldebug_cli.frameworks.trl.vision import VisionRow
    from mldebug_cli.frameworks.vision_subjects import VisionSetup

SEVERITY = "warning"
SUBJECT = "vision-row"


def run(row: VisionRow, setup: VisionSetup) -> Iterator[Hit]:
    header = setup.assistant_header
    if not header.strip():
        return
    for i, message in enumerate(row.messages):
        if message.get("role") not in ("user", "system"):
            continue
        for part in message.get("content") or ():
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and header in "\n" + text:
                yield Hit(f"{message['role']} text contains the assistant header {header!r}: code that finds the "
                          "assistant span by matching it trains from here",
                          "mask by the template's turns (generation markers), not by searching for the header",
                          Location(message_index=i))
                return
