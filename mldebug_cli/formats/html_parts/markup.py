"""Escape-by-default markup: ``Html`` is a string that is already safe; everything else is escaped."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any


class Html(str):
    """Markup that is safe as it is: never escaped again."""

    __slots__ = ()


def esc(value: Any) -> Html:
    """``value`` as text: markup passes through, anything else is escaped (quotes too, for attributes)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def join(parts: Iterable[Any]) -> Html:
    """Children concatenated: ``Html`` kept, ``None`` dropped, lists flattened, the rest escaped."""
    out: list[str] = []
    _flatten(parts, out)
    return Html("".join(out))


def _flatten(parts: Iterable[Any], out: list[str]) -> None:
    for part in parts:
        if part is None or part is False:
            continue
        if isinstance(part, (list, tuple)):
            _flatten(part, out)
        else:
            out.append(esc(part))


def attrs(values: dict[str, Any]) -> Html:
    """``class_="x", data_id=3`` -> `` class="x" data-id="3"``; ``True`` is a bare attribute, ``None``/``False`` none."""
    out = []
    for name, value in values.items():
        if value is None or value is False:
            continue
        name = name.rstrip("_").replace("_", "-")
        out.append(f" {name}" if value is True else f' {name}="{esc(value)}"')
    return Html("".join(out))


def el(tag: str, *children: Any, **attributes: Any) -> Html:
    """An element; ``tag`` and attribute names are code, never data."""
    return Html(f"<{tag}{attrs(attributes)}>{join(children)}</{tag}>")


def void(tag: str, **attributes: Any) -> Html:
    """An element without content (``input``, ``meta``, ``br``, SVG shapes)."""
    return Html(f"<{tag}{attrs(attributes)}>") if tag in _HTML_VOID else Html(f"<{tag}{attrs(attributes)}/>")


_HTML_VOID = {"br", "hr", "input", "meta", "img", "wbr"}


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, with … where it was cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters, and how many were cut."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def facts_list(facts: list[tuple[str, Any]]) -> Html:
    """A two-column list of label/value pairs; pairs with an empty value are left out."""
    return el("dl", [join([el("dt", k), el("dd", v)]) for k, v in facts if v not in (None, "", [], {})], class_="facts")
