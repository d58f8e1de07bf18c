"""Markdown summary: stored expected files, escaping of training-data text, and the size limit."""

from __future__ import annotations

import re

import pytest
from format_cases import alpaca_report, assert_matches_expected, finding, glaive_report, rendered, synthetic

from mldebug_cli.formats.markdown import escape, summary
from support import ROOT


@pytest.mark.parametrize("name, build", [("glaive", glaive_report), ("alpaca-clean", lambda: alpaca_report(("DS015",)))])
def test_matches_the_expected_file(name, build, monkeypatch):
    assert_matches_expected(f"{name}.md", rendered("markdown", build(), monkeypatch))


def test_verdict_table_and_details(monkeypatch):
    text = rendered("markdown", glaive_report(), monkeypatch)
    assert text.startswith("## mldebug inspect-data: 4 errors, 3 warnings in 4 checks\n")
    table = [line for line in text.splitlines() if line.startswith("| DS")]
    assert [row.split(" | ")[0] for row in table] == ["| DS011 `unmapped-role`", "| DS024 `tool-call-dropped`",
                                                      "| DS023 `eos-mismatch`", "| DS025 `tools-not-rendered`"]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 5 for row in table)  # data pipes never add a column
    assert "<details><summary>DS011 unmapped-role: 2 findings</summary>" in text
    assert "&lt;\\|end\\|&gt;" in text and "<|end|>" not in text  # special tokens are not HTML tags


def test_a_clean_report_says_so(monkeypatch):
    text = rendered("markdown", alpaca_report(("DS015",)), monkeypatch)
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
