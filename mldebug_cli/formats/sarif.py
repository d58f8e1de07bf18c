"""SARIF 2.1.0 as GitHub code scanning reads it: one run, a rule per check, a result per finding.

Rules come from the registry (help from each check's docstring); results carry ``ruleId``/``level``/
``message``, a repository-relative location (``startLine`` when the line is known) and a
``partialFingerprints`` entry that does not depend on line numbers or message wording.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

from mldebug_cli import __version__
from mldebug_cli.core import registry
from mldebug_cli.core.findings import Finding, Report, Severity
from mldebug_cli.formats.locations import describe, finding_path, repo_path, source_root

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
FINGERPRINT_KEY = "mldebugFinding/v1"
_LOGICAL_FIELDS = ("row", "message_index", "key", "probe", "side")


def render(report: Report, stream: IO[str], color: bool = False) -> None:
    json.dump(sarif_log(report, source_root()), stream, ensure_ascii=False, indent=1)
    stream.write("\n")


def sarif_log(report: Report, root: Path) -> dict[str, Any]:
    rules = [_rule(ref) for ref in _rule_refs(report)]
    rule_index = {rule["id"]: i for i, rule in enumerate(rules)}
    driver = {
        "name": "mldebug",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": rules,
    }
    run = {
        "tool": {"driver": driver},
        "results": _results(report, root, rule_index),
        "properties": {"command": report.command},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def _rule_refs(report: Report) -> list[registry.CheckRef]:
    """The checks that ran plus any that reported, in registry order."""
    codes = set(report.checks_run) | {f.code for f in report.findings}
    return [ref for ref in registry.REGISTRY if ref.code in codes]


def _rule(ref: registry.CheckRef) -> dict[str, Any]:
    check = registry.load(ref)
    doc = check.documentation
    sections = doc.sections()
    return {
        "id": check.code,
        "name": check.name,
        "shortDescription": {"text": doc.summary or check.name},
        "fullDescription": {"text": " ".join(doc.finds.split()) or check.name},
        "help": {
            "text": "\n\n".join(f"{h}\n{body}" for h, body in sections) or check.doc,
            "markdown": "\n\n".join(f"**{h}**\n\n{body}" for h, body in sections) or check.doc,
        },
        "defaultConfiguration": {"level": LEVELS[check.severity]},
        "properties": {"tags": ["mldebug", ref.module.split(".")[0]]},
    }


def _results(report: Report, root: Path, rule_index: dict[str, int]) -> list[dict[str, Any]]:
    seen: Counter[tuple] = Counter()
    results = []
    for finding in report.findings:
        path = finding_path(finding, report)
        uri = _uri(path, root) if path is not None else None
        identity = (finding.code, uri) + tuple(getattr(finding.location, f) for f in _LOGICAL_FIELDS)
        seen[identity] += 1  # the n-th finding of one check at one place keeps its own alert
        results.append(_result(finding, uri, rule_index, _fingerprint(identity, seen[identity])))
    return results


def _result(finding: Finding, uri: str | None, rule_index: dict[str, int], fingerprint: str) -> dict[str, Any]:
    text = describe(finding)
    if finding.hint:
        text += f"\nhint: {finding.hint}"
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": rule_index[finding.code],
        "level": LEVELS[finding.severity],
        "message": {"text": text},
        "locations": [_location(uri, finding.location.line)] if uri is not None else [],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
    }
    logical = {f: getattr(finding.location, f) for f in _LOGICAL_FIELDS if getattr(finding.location, f) is not None}
    if logical:
        result["properties"] = logical
    return result


def _location(uri: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if line is not None:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def _uri(path: str, root: Path) -> str:
    relative = repo_path(path, root)
    return Path(relative).as_uri() if Path(relative).is_absolute() else quote(relative, safe="/")


def _fingerprint(identity: tuple, occurrence: int) -> str:
    text = "\0".join("" if part is None else str(part) for part in identity + (occurrence,))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
