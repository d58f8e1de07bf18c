"""Findings grouped by check, each with the check's explanation and links to the rows/probes it concerns."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from mldebug_cli.core import registry
from mldebug_cli.core.check_doc import EXAMPLE, FIX, WHY, CheckDoc, first_paragraph
from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import Finding, Location, Severity
from mldebug_cli.core.numbers import plural
from mldebug_cli.formats.html_parts.markup import Html, el, join, shorten
from mldebug_cli.formats.html_parts.text_view import cut_note

MAX_PLACES_PER_CHECK = 100
PLACES_OPEN = 5  # the rest of a check's places are folded away
MAX_MESSAGE_CHARS = 400
SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
_CODE_SPAN = re.compile(r"``?([^`]+)``?")


@dataclass(frozen=True)
class Anchors:
    """Where in the page a finding's location can be shown: element ids by row, by probe, for config keys."""

    rows: Mapping[int, str] = field(default_factory=dict)
    probes: Mapping[str, str] = field(default_factory=dict)
    keys: str | None = None


def check_anchor(prefix: str, code: str) -> str:
    return f"{prefix}-check-{code}"


def badges(findings: list[Finding], prefix: str) -> list[Html]:
    """One link per check that fired on a row or probe, to the check's findings, its first message on hover."""
    first: dict[str, Finding] = {}
    for finding in findings:
        first.setdefault(finding.code, finding)
    return [el("a", code, href=f"#{check_anchor(prefix, code)}", class_=f"badge sev-{f.severity.value}",
               title=shorten(f"{f.name}: {f.message}", MAX_MESSAGE_CHARS)) for code, f in first.items()]


def grouped(findings: list[Finding]) -> list[tuple[str, list[Finding]]]:
    """Findings by check code, the most severe checks first."""
    groups: dict[str, list[Finding]] = {}
    for finding in findings:
        groups.setdefault(finding.code, []).append(finding)
    return sorted(groups.items(), key=lambda kv: (SEVERITY_ORDER[kv[1][0].severity], kv[0]))


def render_findings(findings: list[Finding], prefix: str, anchors: Anchors) -> Html:
    groups = grouped(findings)
    body = [_check(code, group, prefix, anchors) for code, group in groups] or [el("p", "No findings.", class_="passed")]
    return el("section", el("h2", f"Findings ({len(findings)} in {plural(len(groups), 'check')})"), body,
              class_="findings", id=f"{prefix}-findings")


def _check(code: str, group: list[Finding], prefix: str, anchors: Anchors) -> Html:
    first = group[0]
    doc = explanation(code)
    heading = el("h3", el("span", first.severity.value, class_="sev"), " ", el("code", code), " ", first.name,
                 " ", el("span", f"({plural(len(group), 'place')})", class_="meta"))
    return el(
        "section",
        heading,
        el("p", prose(doc.summary), class_="explain") if doc.summary else None,
        _places(group, anchors),
        [el("p", "Fix: ", hint, class_="hint") for hint in _hints(group)],
        _more(doc),
        class_=f"check sev-{first.severity.value}",
        id=check_anchor(prefix, code),
        data_code=code,
    )


def _places(group: list[Finding], anchors: Anchors) -> Html:
    """Where a check fired: places shown in this page first, the first few open, the rest folded, all bounded."""
    ordered = sorted(group, key=lambda f: _shown_in_page(f, anchors) is None)
    items = [_place(f, anchors) for f in ordered[:MAX_PLACES_PER_CHECK]]
    folded = items[PLACES_OPEN:]
    return join([
        el("ul", items[:PLACES_OPEN], class_="where"),
        el("details", el("summary", f"{plural(len(folded), 'more place')}"), el("ul", folded, class_="where")) if folded else None,
        cut_note("places", len(group) - MAX_PLACES_PER_CHECK, " (every place is in --output-format json)"),
    ])


def _shown_in_page(finding: Finding, anchors: Anchors) -> str | None:
    return _where(finding.location, anchors)[1]


def _hints(group: list[Finding]) -> list[str]:
    """The distinct hints of a group, in order, at most three."""
    seen: list[str] = []
    for finding in group:
        hint = finding.hint
        if hint and hint not in seen:
            seen.append(hint)
    return seen[:3]


def _more(doc: CheckDoc) -> Html | None:
    bodies = ((WHY, doc.why), (EXAMPLE, doc.example), (FIX, doc.fix))
    rest = [(heading, first_paragraph(body)) for heading, body in bodies if body]
    if not rest:
        return None
    return el("details", el("summary", "Why it matters, example, fix"),
              [join([el("h4", heading), el("p", prose(body))]) for heading, body in rest])


def _place(finding: Finding, anchors: Anchors) -> Html:
    where, target = _where(finding.location, anchors)
    message = shorten(finding.message, MAX_MESSAGE_CHARS)
    if not where:
        return el("li", message)
    shown = el("a", where, href=f"#{target}") if target else el("span", where, class_="meta")
    return el("li", shown, ": ", message, data_row=finding.location.row)


def _where(loc: Location, anchors: Anchors) -> tuple[str, str | None]:
    """The location in words, and the id of the element that shows it (None when the page does not)."""
    parts, target = [], None
    if loc.row is not None:
        parts.append(f"row {loc.row}" + (f" (line {loc.line})" if loc.line is not None else ""))
        target = anchors.rows.get(loc.row)
        if target is None:
            parts[-1] += " (not shown)"
    elif loc.line is not None:
        parts.append(f"line {loc.line}")
    if loc.message_index is not None:
        parts.append(f"message {loc.message_index}")
    if loc.key:
        parts.append(f"key {loc.key}")
        target = target or anchors.keys
    if loc.probe:
        parts.append(f"probe {loc.probe}")
        target = target or anchors.probes.get(loc.probe)
    if loc.side:
        parts.append(str(loc.side))
    if not parts and loc.path:
        parts.append(str(loc.path))
    return ", ".join(parts), target


def prose(text: str) -> Html:
    """Documentation text with its `code` spans (single or double backticks) set as code."""
    parts = _CODE_SPAN.split(text)
    return join(el("code", part) if i % 2 else part for i, part in enumerate(parts))


@functools.cache
def explanation(code: str) -> CheckDoc:
    """A check's documentation (an empty record for an unknown code)."""
    try:
        return registry.load(registry.lookup(code)).documentation
    except (UsageError, ImportError):
        return CheckDoc()
