"""JUnit XML: stored expected files, parsed back with ElementTree into the expected testcases."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from format_cases import assert_matches_expected, clean_report, demo_report, finding, rendered, synthetic

from mldebug_cli.core.findings import Severity

DATASET = "fixtures/datasets/demo/support_chat.jsonl"
TOKENIZER = "fixtures/tokenizers/llama3-instruct/tokenizer_config.json"


def parsed(report, monkeypatch) -> ET.Element:
    return ET.fromstring(rendered("junit", report, monkeypatch))


def cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}


@pytest.mark.parametrize("name, build", [("demo", demo_report), ("clean-info", clean_report)])
def test_matches_the_expected_file(name, build, monkeypatch):
    assert_matches_expected(f"{name}.junit.xml", rendered("junit", build(), monkeypatch))


def test_one_testcase_per_check_and_input_with_failures_listing_findings(monkeypatch):
    root = parsed(demo_report(), monkeypatch)
    assert root.tag == "testsuites" and root.get("name") == "mldebug inspect-data"
    found = cases(root)
    on_dataset = [name for (classname, name) in found if classname == DATASET]
    assert len(on_dataset) == 25 and on_dataset[0] == "DS001 no-trainable-tokens"
    failing = {key for key, case in found.items() if case.find("failure") is not None}
    assert failing == {(DATASET, "DS024 tool-call-dropped"), (DATASET, "DS012 empty-turn"),
                       (DATASET, "DS013 special-token-in-content"), (DATASET, "DS025 tools-not-rendered"),
                       (TOKENIZER, "DS023 eos-mismatch")}
    failure = found[(DATASET, "DS024 tool-call-dropped")].find("failure")
    assert failure.get("type") == "error" and failure.get("message").startswith("2 findings, the first: row 6 (line 7)")
    assert failure.text.splitlines()[1].startswith("error: row 14 (line 15), message 2: ")
    assert failure.text.splitlines()[-1].startswith("hint: ")
    assert found[(DATASET, "DS025 tools-not-rendered")].find("failure").get("type") == "warning"
    assert found[(DATASET, "DS001 no-trainable-tokens")].find("failure") is None  # passing checks pass


def test_counts_add_up(monkeypatch):
    root = parsed(demo_report(), monkeypatch)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [DATASET, TOKENIZER]
    for suite in suites:
        testcases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(testcases)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in testcases)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("26", "5", "0")


def test_info_findings_pass_and_are_listed_in_system_out(monkeypatch):
    root = parsed(clean_report(), monkeypatch)
    on_dataset, on_tokenizer = [c for c in root.iter("testcase") if c.get("name") == "DS015 no-generation-markers"]
    assert on_dataset.find("system-out") is None and on_tokenizer.get("classname").startswith("fixtures/tokenizers/")
    assert on_tokenizer.find("failure") is None and "no {% generation %} markers" in on_tokenizer.find("system-out").text
    assert root.get("failures") == "0"


def test_text_xml_cannot_hold_is_escaped_and_the_rest_round_trips(monkeypatch):
    message = "bad \x01 byte, <|end|> & \"quotes\" \ud800 ok"
    root = parsed(synthetic(finding(message=message, row=0), finding(severity=Severity.WARNING)), monkeypatch)
    failure = next(root.iter("failure"))
    assert "bad \\x01 byte, <|end|> & \"quotes\" \\xd800 ok" in failure.text


def test_findings_without_any_path_or_target_still_parse(monkeypatch):
    root = parsed(synthetic(finding(), targets=()), monkeypatch)
    assert [c.get("classname") for c in root.iter("testcase")] == ["(no file)"]
