"""Markdown: the report as a GitHub job summary (the `github` format appends the same text to it).

A verdict, a table of the checks that reported, what was checked, then every finding by check, each
check folded in ``<details>``. With a byte ``limit`` the findings are cut to fit and the cut is said.
Data text is escaped: training data is full of ``<|tokens|>``, pipes and backticks.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from mldebug_cli.core.escape import visible
from mldebug_cli.core.findings import Finding, Report, Severity
from mldebug_cli.formats.locations import describe, finding_path, one_line, repo_path, source_root

MAX_CELL = 160  # characters of a message shown in the table; the full text is in the details below
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~#!])")


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    stream.write(summary(report, source_root()))


@dataclass(frozen=True)
class _Section:
    head: tuple[str, ...]
    items: tuple[str, ...]
    tail: tuple[str, ...]


def summary(report: Report, root: Path, limit: int | None = None) -> str:
    """The Markdown summary, at most ``limit`` bytes in UTF-8 ("" when not even the head fits)."""
    lines = _head(report, root)
    omitted = 0
    for section in _sections(report, root):
        kept = _fit(lines, section, limit)
        omitted += len(section.items) - len(kept)
        if kept:
            lines += [*section.head, *kept, *section.tail]
    if omitted:
        lines += [f"*{omitted} more findings are not shown: a job summary holds at most 1 MiB. "
                  "`--output-format json` or `sarif` writes every finding.*", ""]
    text = "\n".join(lines)
    return "" if limit is not None and _size(text) > limit else text


def _fit(lines: list[str], section: _Section, limit: int | None) -> list[str]:
    if limit is None:
        return list(section.items)
    reserve = 300  # room for the closing tags and the note on what was cut
    used = _size("\n".join(lines)) + _size("\n".join(section.head + section.tail)) + reserve
    kept = []
    for item in section.items:
        used += _size(item) + 1
        if used > limit:
            break
        kept.append(item)
    return kept


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def by_check(findings: tuple[Finding, ...]) -> list[tuple[str, list[Finding]]]:
    """Findings grouped by check, the most severe checks first, then by code."""
    groups: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        groups[finding.code].append(finding)
    return sorted(groups.items(), key=lambda kv: (-max(f.severity.rank for f in kv[1]), kv[0]))


def verdict(report: Report) -> str:
    counts = report.counts()
    parts = [f"{n} {sev.value}{'s' if n != 1 else ''}" for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO)
             if (n := counts[sev.value])]
    if not parts:
        return "no findings"
    groups = len(by_check(report.findings))
    return f"{', '.join(parts)} in {groups} check{'s' if groups != 1 else ''}"


def escape(text: str) -> str:
    """Data text made inert for GitHub Markdown: no HTML, no emphasis, no table breaks, one line."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(visible(one_line(text)), quote=False))


def _head(report: Report, root: Path) -> list[str]:
    lines = [f"## mldebug {report.command}: {verdict(report)}", ""]
    if report.checks_run:
        targets = ", ".join(escape(repo_path(t, root)) for t in report.targets) or "the inputs"
        lines += [f"{len(report.checks_run)} checks ran on {targets}.", ""]
    if report.findings:
        lines += ["| check | severity | findings | first finding |", "|---|---|---|---|"]
        for code, group in by_check(report.findings):
            first = group[0]
            lines.append(f"| {code} `{first.name}` | {first.severity.value} | {len(group)} | {_cell(describe(first))} |")
        lines.append("")
    context = [f"- {escape(key.replace('_', ' '))}: {escape(str(value))}" for key, value in report.context.items()
               if value not in (None, "", [], {})]
    if context:
        lines += ["<details><summary>What was checked</summary>", "", *context, "", "</details>", ""]
    return lines


def _sections(report: Report, root: Path) -> list[_Section]:
    sections = []
    for code, group in by_check(report.findings):
        first = group[0]
        count = f"{len(group)} finding{'s' if len(group) != 1 else ''}"
        head = (f"<details><summary>{code} {first.name}: {count}</summary>", "")
        items = tuple(f"- {_item(f, report, root)}" for f in group)
        hints = dict.fromkeys(f.hint for f in group if f.hint)
        tail = ("", *(f"Hint: {escape(h)}" for h in hints), *([""] if hints else ()), "</details>", "")
        sections.append(_Section(head, items, tail))
    return sections


def _item(finding: Finding, report: Report, root: Path) -> str:
    path = finding_path(finding, report)
    where = escape(repo_path(path, root)) + " — " if path is not None else ""
    return f"{finding.severity.value}: {where}{escape(describe(finding))}"


def _cell(text: str) -> str:
    return escape(text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…")
