"""Human-readable report for a terminal (rich). Data text is always passed as rich Text, never markup.

Generic parts live here (context, findings grouped by check, verdict); a command's own section
(rows, schedule chart, template diff) lives in ``formats/text_<command>.py`` as
``render_details(report, console)``.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import IO

from rich.text import Text

from mldebug_cli.core.console import make_console
from mldebug_cli.core.findings import Finding, NotKept, Report, Severity
from mldebug_cli.core.numbers import plural
from mldebug_cli.formats.locations import place

SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
MAX_LOCATIONS_SHOWN = 2  # per check, in full; the rest as places on one line (every finding is in JSON/HTML)
MANY = 3  # a check with this many places or more shows one in full: the rest say only where
MAX_MORE_PLACES = 3


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    """The first screen says what matters: the verdict, what was checked and the findings grouped with counts; a
    command whose own section is long (inspect-data's rows, preflight's) shows it after them (``FINDINGS_FIRST``)."""
    console = make_console(stream, color)
    _render_context(report, console)
    details = _details_module(report.command)
    findings_first = getattr(details, "FINDINGS_FIRST", False)
    if findings_first:
        _render_findings(report.findings, console, report.not_kept)
    if details is not None:
        details.render_details(report, console)
    if not findings_first:
        _render_findings(report.findings, console, report.not_kept)
    _render_verdict(report, console)


def _details_module(command: str):
    try:
        return importlib.import_module(f"mldebug_cli.formats.text_{command.replace('-', '_')}")
    except ModuleNotFoundError:
        return None


def _render_context(report: Report, console) -> None:
    title = Text(f"mldebug {report.command}", style="bold")
    title.append(": ")
    title.append_text(_verdict_text(report))
    console.print(title)
    for key, value in report.context.items():
        if value in (None, "", [], {}):
            continue
        line = Text(f"  {key.replace('_', ' ')}: ", style="dim")
        line.append(value if isinstance(value, str) else str(value))
        console.print(line)
    console.print()


def _group(findings: tuple[Finding, ...]) -> dict[str, list[Finding]]:
    groups: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        groups[f.code].append(f)
    for group in groups.values():  # a finding on the whole dataset (the run will not start) before its rows'
        group.sort(key=lambda f: f.location.row is not None)
    return dict(sorted(groups.items(), key=lambda kv: (-kv[1][0].severity.rank, kv[0])))


def _render_findings(findings: tuple[Finding, ...], console, not_kept: tuple[NotKept, ...] = ()) -> None:
    if not findings:
        return
    console.print(Text("Findings", style="bold underline"))
    uncounted: dict[str, int] = {}
    for n in not_kept:
        uncounted[n.code] = uncounted.get(n.code, 0) + n.count
    for code, group in _group(findings).items():
        first = group[0]
        head = Text(f"{first.severity.value:<7} ", style=SEVERITY_STYLE[first.severity])
        head.append(f"{code} {first.name}", style="bold")
        if len(group) > 1 or first.location.row is not None:
            head.append(f"  ({plural(len(group) + uncounted.get(code, 0), 'place')})", style="dim")
        console.print(head)
        in_full = 1 if len(group) >= MANY else MAX_LOCATIONS_SHOWN
        for f in group[:in_full]:
            where = place(f.location)
            line = Text("  ")
            if where:
                line.append(f"{where}: ", style="dim")
            line.append(f.message)
            console.print(line)
        if len(group) > in_full:
            rest = [place(f.location) for f in group[in_full:]]
            shown = "; ".join(rest[:MAX_MORE_PLACES]) + ("; …" if len(rest) > MAX_MORE_PLACES else "")
            console.print(Text(f"  … and {len(rest) + uncounted.get(code, 0)} more: {shown}", style="dim"))
        if uncounted.get(code):
            console.print(Text(f"  (the first {len(group):,} are kept in the report, {uncounted[code]:,} more counted; "
                               "--all-findings keeps every one)", style="dim"))
        if first.hint:
            console.print(Text(f"  hint: {first.hint}", style="green"))
    console.print()


def _render_verdict(report: Report, console) -> None:
    console.print(_verdict_text(report))


def _verdict_text(report: Report) -> Text:
    """``1 error  2 warnings  in 3 checks``, or ``No findings.``"""
    counts = report.counts()
    if report.worst() is None:
        return Text("No findings.", style="bold green")
    text = Text()
    for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        n = counts[sev.value]
        if n:
            text.append(f"{plural(n, sev.value)}  ", style=SEVERITY_STYLE[sev])
    text.append(f"in {plural(len(_group(report.findings)), 'check')}", style="dim")
    return text
