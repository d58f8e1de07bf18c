"""The page: head with the inline stylesheet, the header (verdict, counts, what was checked), one section per report.

A command's report is one section. A ``preflight`` report lists its parts (``core.sections.preflight``): each
with its command, target, context, summary, findings and the command's own sections. Every section is drawn by the
same code as its command's own report: the part module of its command, ``render(part, prefix, findings)``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from mldebug_cli import __version__
from mldebug_cli.core.findings import ContextValue, Finding, Report
from mldebug_cli.core.sections.preflight import PartView, PreflightSection
from mldebug_cli.formats.html_parts.findings import Anchors, grouped, render_findings
from mldebug_cli.formats.html_parts.markup import Html, el, facts_list, join, void
from mldebug_cli.formats.html_parts.style import CSS

# Nothing may load or run: no script, no remote font, image or frame; only the inline stylesheet.
CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
PARTS = {"inspect-data": "rows", "check-template": "templates", "lr-plot": "schedule", "check-run": "runlog"}
MAX_CONTEXT_CHARS = 2_000
_VERDICTS = {
    "error": ("verdict-error", "Errors found"),
    "warning": ("verdict-warning", "Warnings found"),
    "info": ("verdict-ok", "Passed, with notes"),
    None: ("verdict-ok", "Passed"),
}


def render_page(report: Report, versions: Mapping[str, str]) -> Html:
    documents = section_documents(report)
    nested = report.command == "preflight"
    sections = [_section(doc, f"s{i}", nested) for i, doc in enumerate(documents)]
    has_tokens = any(doc.command == "inspect-data" for doc in documents)
    body = el(
        "body",
        void("input", type="checkbox", id="show-ids", title="show token ids") if has_tokens else None,
        el("label", "show token ids", for_="show-ids", class_="show-ids") if has_tokens else None,
        _header(report, versions),
        el("main", _nav(documents, nested), sections),
        el("footer", f"Written by mldebug {__version__}. This file is self-contained: it loads nothing from the "
                     "network and runs no script."),
    )
    head = el(
        "head",
        void("meta", charset="utf-8"),
        void("meta", http_equiv="Content-Security-Policy", content=CSP),
        void("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", f"mldebug {report.command}: {_verdict(report)[1]}"),
        el("style", Html(CSS)),
    )
    return Html("<!DOCTYPE html>\n" + el("html", head, body, lang="en") + "\n")


def section_documents(report: Report) -> list[PartView]:
    """The report's sections: the report itself, or a preflight report's parts."""
    if report.command != "preflight" or not PreflightSection.has_parts(report.details):
        return [PartView.of_report(report)]
    documents = list(PreflightSection.from_details(report.details).parts)
    placed = {_key(f) for doc in documents for f in doc.findings}
    own = tuple(f for f in report.findings if _key(f) not in placed)
    if own:
        documents.insert(0, PartView("preflight", findings=own))
    return documents


def _key(finding: Finding) -> str:
    return json.dumps(finding.as_dict(), sort_keys=True, default=str)


def _verdict(report: Report) -> tuple[str, str]:
    worst = report.worst()
    return _VERDICTS[worst.value if worst is not None else None]


def _header(report: Report, versions: Mapping[str, str]) -> Html:
    css_class, verdict = _verdict(report)
    counts = report.counts()
    count_chips = [el("span", f"{counts[s]} {s}{'s' if counts[s] != 1 and s != 'info' else ''}", class_=f"count {s}")
                   for s in ("error", "warning", "info")]
    return el(
        "header",
        el("h1", f"mldebug {report.command}"),
        el("p", el("span", verdict, class_="verdict", id="verdict"), el("span", count_chips, class_="counts")),
        el("h3", "What was checked"),
        facts_list(_checked(report, versions)),
        class_=f"top {css_class}",
    )


def _checked(report: Report, versions: Mapping[str, str]) -> list[tuple[str, Any]]:
    context = context_facts(report.context)
    named = {value for _, value in context}
    facts = [("inputs", ", ".join(t for t in report.targets if t not in named) or None), *context]
    facts.append(("checks", _checks_line(report)))
    # the context's "versions" line is the versions the run is judged at; these are the ones that wrote the page
    facts.append(("written by", ", ".join(f"{name} {version}" for name, version in versions.items()) or None))
    return facts


def context_facts(context: Mapping[str, ContextValue]) -> list[tuple[str, str]]:
    out = []
    for key, value in context.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        if value in (None, "", [], {}):
            continue
        out.append((key.replace("_", " "), text[:MAX_CONTEXT_CHARS]))
    return out


def _checks_line(report: Report) -> Html | None:
    if not report.checks_run:
        return None
    found = {f.code for f in report.findings}
    passed = [code for code in report.checks_run if code not in found]
    return join([f"{len(report.checks_run)} ran, {len(report.checks_run) - len(passed)} with findings, "
                 f"{len(passed)} passed", el("details", el("summary", "passed checks"), _passed(passed))
                 if passed else None])


def _passed(codes: list[str]) -> Html:
    from mldebug_cli.core import registry

    names = {ref.code: ref.name for ref in registry.REGISTRY}
    return el("ul", [el("li", el("code", code), " ", names.get(code, "")) for code in codes], class_="passed")


def _nav(documents: list[PartView], nested: bool) -> Html:
    links = []
    for i, doc in enumerate(documents):
        prefix, command = f"s{i}", doc.command
        label = f"{command}: " if nested else ""
        links.append(el("a", f"{label}Findings ({len(doc.findings)})", href=f"#{prefix}-findings"))
        part = _part(command)
        for suffix, title in getattr(part, "NAV", ()):
            links.append(el("a", f"{label}{title}", href=f"#{prefix}-{suffix}"))
    return el("nav", links, class_="sections")


def _section(doc: PartView, prefix: str, nested: bool) -> Html:
    command = doc.command
    findings = [f for _, group in grouped(list(doc.findings)) for f in group]
    part = _part(command)
    anchors = part.anchors(doc, prefix) if part is not None else Anchors()
    return el(
        "section",
        el("h2", f"mldebug {command}", class_="command-title") if nested else None,
        facts_list(context_facts(doc.context)) if nested else None,
        render_findings(findings, prefix, anchors),
        part.render(doc, prefix, findings) if part is not None else None,
        class_="command", id=prefix, data_command=command,
    )


def _part(command: str) -> ModuleType | None:
    name = PARTS.get(command)
    if name is None:
        return None
    return importlib.import_module(f"mldebug_cli.formats.html_parts.{name}")
