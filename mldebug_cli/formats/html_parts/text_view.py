"""Dataset text made visible: whitespace markers, special-token highlights, cut notes."""

from __future__ import annotations

import re

from mldebug_cli.formats.html_parts.markup import Html, el, join

# Trailing spaces are those before a newline or at the end of a line of text.
_WHITESPACE = re.compile(r"\n|\t| +(?=\n|\Z)")
_ALL_WHITESPACE = re.compile(r"\n|\t| +")


def visible(text: str, ends_line: bool = True, newline: str = "\n", all_spaces: bool = False) -> Html:
    """``text`` escaped, with newlines as ↵, tabs as → and trailing spaces as · (dim markers).

    ``ends_line``: whether the end of ``text`` is the end of a line (false when a special token follows);
    ``newline``: what follows the ↵ marker (a real newline inside ``<pre>``, nothing in a chip);
    ``all_spaces``: every space as · (for a difference that may be only whitespace).
    """
    parts: list[object] = []
    pos = 0
    for match in (_ALL_WHITESPACE if all_spaces else _WHITESPACE).finditer(text):
        found = match.group()
        if found.startswith(" ") and match.end() == len(text) and not ends_line and not all_spaces:
            continue
        parts.append(text[pos:match.start()])
        parts.append(_marker(found, newline))
        pos = match.end()
    parts.append(text[pos:])
    return join(parts)


def _marker(found: str, newline: str) -> Html:
    if found == "\n":
        return join([el("span", "↵", class_="ws"), newline])
    if found == "\t":
        return el("span", "→", class_="ws")
    return el("span", "·" * len(found), class_="ws")


def highlighted(text: str, spans: list[tuple[int, int]], span_class: str) -> Html:
    """``text`` made visible, with the sorted, non-overlapping character ``spans`` wrapped in ``span_class``."""
    parts: list[Html] = []
    pos = 0
    for start, end in spans:
        if start < pos:
            continue
        parts.append(visible(text[pos:start], ends_line=False))
        parts.append(el("span", visible(text[start:end], ends_line=False), class_=span_class))
        pos = end
    parts.append(visible(text[pos:]))
    return join(parts)


def cut_note(what: str, count: int, hint: str = "") -> Html | None:
    """A visible note saying what the page left out (nothing when nothing was cut)."""
    if count <= 0:
        return None
    first, space, rest = what.partition(" ")  # `what` starts with a plural: "1 more row", "1 more token of this row"
    noun = (first[:-1] if count == 1 and first.endswith("s") else first) + space + rest
    return el("p", f"… {count:,} more {noun} not shown{hint}", class_="cut")
