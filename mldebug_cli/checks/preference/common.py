"""Small helpers the DP checks share."""

from __future__ import annotations

from typing import Any


def reply_text(reply: Any) -> str:
    """The text of a reply: a string, or the contents of its messages joined."""
    if isinstance(reply, str):
        return reply
    return "".join(m.get("content") or "" for m in reply if isinstance(m, dict))


def without_eos(text: str, eos: str | None) -> str:
    return text[: -len(eos)] if eos and text.endswith(eos) else text
