"""JUnit XML: a testcase per (check, input), so test reporters show passing checks as passed.

A testsuite per input the checks ran on. A testcase fails when its check reported an error or a
warning there (the failure lists every finding); info findings leave it passed and are listed in
``system-out``. A finding whose file is not one of the report's inputs (a tokenizer a setup check
looked at) gets a testcase of its own under that file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path
from typing import IO

from mldebug_cli.core import registry
from mldebug_cli.core.findings import Finding, Report, Severity
from mldebug_cli.formats.locations import describe, finding_path, repo_path, source_root

# Characters XML 1.0 cannot hold at all, not even escaped; training data can contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    tree = ET.ElementTree(junit_document(report, source_root()))
    ET.indent(tree)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    tree.write(stream, encoding="unicode")
    stream.write("\n")


def junit_document(report: Report, root: Path) -> ET.Element:
    grouped = _by_file_and_check(report, root)
    targets = list(dict.fromkeys(repo_path(t, root) for t in report.targets))
    suites = ET.Element("testsuites", name=f"mldebug {report.command}")
    for path in targets + [p for p in grouped if p not in targets]:
        found = grouped.get(path, {})
        ran = list(report.checks_run) if path in targets else []
        suites.append(_suite(path, ran + [code for code in found if code not in ran], found))
    children = suites.findall("testsuite")
    _set_counts(suites, sum(int(s.get("tests", "0")) for s in children), sum(int(s.get("failures", "0")) for s in children))
    return suites


def _by_file_and_check(report: Report, root: Path) -> dict[str, dict[str, list[Finding]]]:
    grouped: dict[str, dict[str, list[Finding]]] = defaultdict(lambda: defaultdict(list))
    for finding in report.findings:
        path = finding_path(finding, report)
        grouped[repo_path(path, root) if path is not None else "(no file)"][finding.code].append(finding)
    return grouped


def _suite(path: str, codes: list[str], findings: dict[str, list[Finding]]) -> ET.Element:
    suite = ET.Element("testsuite", name=_xml_text(path))
    cases = [_testcase(path, code, findings.get(code, [])) for code in codes]
    suite.extend(cases)
    _set_counts(suite, len(cases), sum(1 for c in cases if c.find("failure") is not None))
    return suite


def _testcase(path: str, code: str, findings: list[Finding]) -> ET.Element:
    name = f"{code} {registry.lookup(code).name}"
    case = ET.Element("testcase", classname=_xml_text(path), name=name, file=_xml_text(path))
    failing = [f for f in findings if f.severity.rank >= Severity.WARNING.rank]
    if failing:
        worst = max(failing, key=lambda f: f.severity.rank).severity.value
        count = f"{len(failing)} finding{'s' if len(failing) != 1 else ''}"
        message = _xml_text(f"{count}, the first: {describe(failing[0])}")
        failure = ET.SubElement(case, "failure", message=message, type=worst)
        failure.text = _xml_text("\n".join(_line(f) for f in failing) + _hint(failing))
    notes = [f for f in findings if f.severity.rank < Severity.WARNING.rank]
    if notes:
        ET.SubElement(case, "system-out").text = _xml_text("\n".join(_line(f) for f in notes))
    return case


def _line(finding: Finding) -> str:
    return f"{finding.severity.value}: {describe(finding)}"


def _hint(findings: list[Finding]) -> str:
    hints = dict.fromkeys(f.hint for f in findings if f.hint)
    return "".join(f"\nhint: {h}" for h in hints)


def _set_counts(element: ET.Element, tests: int, failures: int) -> None:
    element.set("tests", str(tests))
    element.set("failures", str(failures))
    element.set("errors", "0")
    element.set("skipped", "0")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
