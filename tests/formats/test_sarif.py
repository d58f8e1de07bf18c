"""SARIF: stored expected files, the official 2.1.0 schema, and what GitHub code scanning relies on."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import pytest
from format_cases import assert_matches_expected, clean_report, demo_report, finding, rendered, synthetic

from mldebug_cli.core import registry
from mldebug_cli.core.check_doc import CheckDoc
from mldebug_cli.core.findings import Severity
from support import FIXTURES, ROOT

SCHEMA = json.loads((FIXTURES / "sarif" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def sarif(report, monkeypatch) -> dict:
    return json.loads(rendered("sarif", report, monkeypatch))


def validate(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)


def without_docs(log: dict) -> dict:
    """The log with each rule's documentation replaced by a marker: a docstring edit changes no expected file
    (test_rules_come_from_the_registry_with_help checks that text)."""
    for rule in log["runs"][0]["tool"]["driver"]["rules"]:
        for key in ("shortDescription", "fullDescription", "help"):
            rule[key] = f"<{key} of {rule['id']} from its docstring>"
    return log


@pytest.mark.parametrize("name, build", [("demo", demo_report), ("clean-info", clean_report)])
def test_matches_the_expected_file_and_the_schema(name, build, monkeypatch):
    log = sarif(build(), monkeypatch)
    validate(log)
    assert_matches_expected(f"{name}.sarif", json.dumps(without_docs(log), ensure_ascii=False, indent=1) + "\n")


def test_rules_come_from_the_registry_with_help(monkeypatch):
    run = sarif(demo_report(), monkeypatch)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(demo_report().checks_run)
    by_id = {r["id"]: r for r in rules}
    dropped = by_id["DS011"]
    assert dropped["name"] == "unmapped-role" and dropped["defaultConfiguration"]["level"] == "error"
    doc = registry.load(registry.lookup("DS011")).doc
    assert dropped["shortDescription"]["text"] == " ".join(doc.split("What it finds", 1)[1].strip().split("\n\n")[0].split())
    for heading in ("What it finds", "Why it matters for training", "Example", "Fix"):
        assert f"**{heading}**" in dropped["help"]["markdown"] and heading in dropped["help"]["text"]
    assert by_id["DS015"]["defaultConfiguration"]["level"] == "note"  # info is SARIF's "note"


def test_docstring_sections_with_indented_bodies():
    doc = "Title line.\n\nWhat it finds\n    One.\n\n    Two.\n\nExample\n    ``x``\n\nFix\n    Do y.\n"
    assert dict(CheckDoc.parse(doc).sections()) == {"What it finds": "One.\n\nTwo.", "Example": "``x``", "Fix": "Do y."}
    assert CheckDoc.parse(doc) == CheckDoc(finds="One.\n\nTwo.", example="``x``", fix="Do y.")  # no "Why" heading


def test_results_point_at_repo_relative_files_and_lines(monkeypatch):
    results = sarif(demo_report(), monkeypatch)["runs"][0]["results"]
    rules = sarif(demo_report(), monkeypatch)["runs"][0]["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in results)
    dropped = [r for r in results if r["ruleId"] == "DS024"]
    locations = [r["locations"][0]["physicalLocation"] for r in dropped]
    assert {loc["artifactLocation"]["uri"] for loc in locations} == {"fixtures/datasets/demo/support_chat.jsonl"}
    assert [loc["region"]["startLine"] for loc in locations] == [7, 15]
    assert dropped[0]["message"]["text"].startswith("row 6 (line 7), message 2: ")
    assert dropped[0]["properties"] == {"row": 6, "message_index": 2}
    assert {r["level"] for r in results} == {"error", "warning"}


def test_a_finding_without_a_line_has_no_region_and_without_a_path_uses_the_target(monkeypatch):
    report = synthetic(finding(path="configs/train.yaml", key="training.warmup_steps"), finding(row=3))
    first, second = sarif(report, monkeypatch)["runs"][0]["results"]
    assert first["locations"] == [{"physicalLocation": {"artifactLocation": {"uri": "configs/train.yaml"}}}]
    assert first["message"]["text"] == "key training.warmup_steps: a message"
    assert second["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "data/train.jsonl"


def test_absolute_paths_are_made_relative_and_outside_paths_are_file_uris(monkeypatch, tmp_path):
    inside = finding(path=str(ROOT / "data" / "my set.jsonl"), line=4)
    outside = finding(path=str(tmp_path / "elsewhere.jsonl"))
    log = sarif(synthetic(inside, outside), monkeypatch)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
    assert uris == ["data/my%20set.jsonl", (tmp_path / "elsewhere.jsonl").as_uri()]
    validate(log)


def test_fingerprints_are_stable_unique_and_ignore_lines_and_wording(monkeypatch):
    report = demo_report()
    prints = [r["partialFingerprints"] for r in sarif(report, monkeypatch)["runs"][0]["results"]]
    assert len({json.dumps(p) for p in prints}) == len(prints)
    moved = report.with_findings(tuple(
        replace(f, message=f.message.upper(), location=replace(f.location, line=(f.location.line or 0) + 7))
        for f in report.findings
    ))
    assert [r["partialFingerprints"] for r in sarif(moved, monkeypatch)["runs"][0]["results"]] == prints


def test_repeated_findings_at_one_place_keep_distinct_fingerprints(monkeypatch):
    twice = synthetic(finding(row=1, message_index=2), finding(row=1, message_index=2, message="another"))
    a, b = (r["partialFingerprints"] for r in sarif(twice, monkeypatch)["runs"][0]["results"])
    assert a != b


def test_a_clean_report_still_lists_the_rules_that_ran(monkeypatch):
    log = sarif(clean_report(ignore=("DS015",)), monkeypatch)
    run = log["runs"][0]
    assert run["results"] == [] and "DS001" in [r["id"] for r in run["tool"]["driver"]["rules"]]
    validate(log)


def test_machine_output_has_no_ansi_and_levels_follow_severity(monkeypatch):
    text = rendered("sarif", synthetic(finding(severity=Severity.INFO, message="\x1b[31mred\x1b[0m")), monkeypatch)
    assert "\x1b" not in text  # json escapes control characters
    assert json.loads(text)["runs"][0]["results"][0]["level"] == "note"
