"""What the text views of rows and pairs share: the styles of trained and masked text, and visible whitespace."""

from __future__ import annotations

TRAINED_STYLE = "bold green"
MASKED_STYLE = "dim"
PROMPT_LIMIT = 20_000  # characters of the rendered prompt shown


def visible(text: str) -> str:
    """Whitespace made visible: newlines as ↵ (kept as line breaks), tabs as →, trailing spaces as ·."""
    lines = text.replace("\t", "→").split("\n")
    shown = [line[: len(line.rstrip(" "))] + "·" * (len(line) - len(line.rstrip(" "))) for line in lines]
    return "↵\n".join(shown)
