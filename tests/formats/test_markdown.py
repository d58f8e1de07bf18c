"""Markdown summary: stored expected files, escaping of training-data text, and the size limit."""

from __future__ import annotations

import re

import pytest
from format_cases import assert_matches_expected, clean_report, demo_report, finding, rendered, synthetic

from mldebug_cli.formats.markdown import escape, summary
from support import ROOT


@pytest.mark.parametrize("name, build", [("demo", demo_report), ("clean-clean", lambda: clean_report(("DS015",)))])
def test_matches_the_expected_file(name, build, monkeypatch):
    assert_matches_expected(f"{name}.md", rendered("markdown", build(), monkeypatch))


def test_verdict_table_and_details(monkeypatch):
    text = rendered("markdown", demo_report(), monkeypatch)
    assert text.startswith("## mldebug inspect-data: 3 errors, 4 warnings in 5 checks\n")
    table = [line for line in text.splitlines() if line.startswith("| DS")]
    assert [row.split(" | ")[0] for row in table] == [
        "| DS013 `special-token-in-content`", "| DS024 `tool-call-dropped`", "| DS012 `empty-turn`",
        "| DS023 `eos-mismatch`", "| DS025 `tools-not-rendered`"]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 5 for row in table)  # data pipes never add a column
    assert "<details><summary>DS024 tool-call-dropped: 2 findings</summary>" in text
    assert "&lt;\\|eot\\_id\\|&gt;" in text and "<|eot_id|>" not in text  # special tokens are not HTML tags


def test_a_clean_report_says_so(monkeypatch):
    text = rendered("markdown", clean_report(("DS015",)), monkeypatch)
    assert text.startswith("## mldebug inspect-data: no findings\n\n24 checks ran on fixtures/")
    assert "| check |" not in text


def test_escape_neutralises_markdown_and_html():
    assert escape("<script>a|b</script> *x* `y` [z](u) line\nnext") == (
        "&lt;script&gt;a\\|b&lt;/script&gt; \\*x\\* \\`y\\` \\[z\\](u) line\\\\nnext"
    )


def test_a_limit_cuts_findings_and_says_how_many(tmp_path):
    report = synthetic(*(finding(message=f"problem {i} " + "x" * 200, row=i) for i in range(500)))
    full = summary(report, ROOT)
    cut = summary(report, ROOT, limit=20_000)
    assert len(cut.encode()) <= 20_000 < len(full.encode())
    shown = cut.count("\n- error: ")
    assert 0 < shown < 500 and f"*{500 - shown} more findings are not shown" in cut
    assert cut.count("<details>") == cut.count("</details>")
    assert summary(report, ROOT, limit=100) == ""  # not even the head fits
