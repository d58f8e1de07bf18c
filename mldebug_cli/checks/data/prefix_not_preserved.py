"""What it finds
An assistant turn for which rendering the history up to it (with the generation prompt) is not a
prefix of rendering the conversation through it: the template rewrites history, e.g. drops earlier
reasoning, adds an empty `<think>` block only to the last turn, or stamps the current date.

Why it matters for training
Turn-by-turn masking (per-turn prefix renders, TRL's prompt/completion split) assumes the prefix
property; where it fails, masks land on the wrong tokens, and the model is trained on a context
shape it never sees at inference. (axolotl's chat_template diffs whole-conversation renders instead,
so its masks do not depend on it.)

Example
Qwen3's template writes `<think>\n\n</think>` into the last assistant turn only: in a two-turn
conversation the first answer renders differently when it is the last one.

Fix
Train with a template that renders history stably (a training variant with `{% generation %}`
markers), or train only on the last turn.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.core.findings import Hit

if TYPE_CHECKING:
    from mldebug_cli.frameworks.subjects import Row, Setup

SEVERITY = "warning"
SUBJECT = "row"


def run(row: Row, setup: Setup) -> Iterator[Hit]:
    broken = [t for t in row.turns if not t.prefix_preserved]
    if not row.ok or not broken:
        return
    unlocated = [t.message_index for t in broken if t.located_by == "unlocated"]
    indices = ", ".join(str(t.message_index) for t in broken)
    message = f"the template renders assistant message {indices} differently once later turns follow (history is rewritten)"
    if unlocated:
        message += f"; message {', '.join(map(str, unlocated))} could not be located and is left masked"
    yield Hit(message, "use a training template with {% generation %} markers, or train on the last turn only",
              row.location(broken[0].message_index))
