"""The bounds every Jinja parse runs within, for the template readers (``sources``) and the renderers (``render``)
alike: a template too long or nested too deep is a syntax error at line 1, not minutes of parsing or a crash."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


MAX_TEMPLATE_CHARS = 1_000_000  # of Jinja source, as for Go templates: real chat templates are a few KiB to ~50 KiB


def bounded_parse(compile_source: Callable[[str], T], source: str) -> T:
    """``compile_source(source)`` for every Jinja engine, within mldebug's parse bounds: a source over
    MAX_TEMPLATE_CHARS (an 18 MB template parses for minutes) or nested past Python's recursion limit (5,000 ``{% if
    %}``) is a ``jinja2.TemplateSyntaxError`` at line 1, reported as every syntax error is, naming its template."""
    import jinja2

    if len(source) > MAX_TEMPLATE_CHARS:
        raise jinja2.TemplateSyntaxError(f"the template is {len(source):,} characters long, over the "
                                         f"{MAX_TEMPLATE_CHARS:,} mldebug parses", 1)
    try:
        return compile_source(source)
    except RecursionError:
        raise jinja2.TemplateSyntaxError("the template is nested too deeply to parse (Python's recursion limit)",
                                         1) from None
