"""GitHub Actions: workflow commands (escaping as actions/toolkit does it), groups, and the job summary file."""

from __future__ import annotations

import pytest
from format_cases import assert_matches_expected, clean_report, demo_report, finding, rendered, synthetic

from mldebug_cli.core.errors import MldebugError
from mldebug_cli.core.findings import Severity
from mldebug_cli.formats import github
from mldebug_cli.formats.markdown import summary
from support import ROOT


def test_matches_the_expected_file_and_writes_no_summary_without_the_variable(monkeypatch):
    monkeypatch.setattr(github, "append_summary", lambda *args: pytest.fail("wrote a summary"))
    assert_matches_expected("demo.github.txt", rendered("github", demo_report(), monkeypatch))
    assert rendered("github", clean_report(("DS015",)), monkeypatch) == "mldebug inspect-data: no findings\n"


def test_annotations_carry_file_line_and_title_inside_groups(monkeypatch):
    lines = rendered("github", demo_report(), monkeypatch).splitlines()
    group = lines.index("::group::DS024 tool-call-dropped (2)")
    assert lines[0] == "::group::DS013 special-token-in-content (1)"  # errors first, then by code
    assert lines[group + 1].startswith(
        "::error file=fixtures/datasets/demo/support_chat.jsonl,line=7,title=DS024 tool-call-dropped::"
        "row 6 (line 7), message 2: "
    )
    assert "%0Ahint: use a chat template that renders tool_calls" in lines[group + 1]
    assert lines.count("::endgroup::") == 5 and lines[-1] == "mldebug inspect-data: 3 errors, 4 warnings in 5 checks"
    eos = next(line for line in lines if "DS023" in line and line.startswith("::warning"))
    assert ",line=" not in eos  # no line is known for a setup finding: the file alone


def test_escaping_follows_the_workflow_command_rules():
    assert github.escape_data("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b"
    assert github.escape_property("C:\\data\\a,b.jsonl\n%") == "C%3A\\data\\a%2Cb.jsonl%0A%25"


def test_properties_and_message_are_escaped_in_annotations(monkeypatch):
    report = synthetic(finding(message="50% of rows\nare cut: see row 1, 2", path="data/a,b:c.jsonl", line=3))
    (annotation,) = [line for line in rendered("github", report, monkeypatch).splitlines() if line.startswith("::error")]
    assert annotation == ("::error file=data/a%2Cb%3Ac.jsonl,line=3,title=DS011 unmapped-role::"
                          "line 3: 50%25 of rows%0Aare cut: see row 1, 2")


def test_ten_annotations_of_a_kind_then_log_lines_and_a_notice(monkeypatch):
    report = synthetic(*(finding(row=i, line=i + 2, message=f"m{i}\n::add-mask::x") for i in range(25)),
                       finding("DS023", "eos-mismatch", Severity.WARNING))
    lines = rendered("github", report, monkeypatch).splitlines()
    assert sum(line.startswith("::error ") for line in lines) == 10
    assert sum(line.startswith("::warning ") for line in lines) == 1
    log_lines = [line for line in lines if line.startswith("error: ")]
    assert len(log_lines) == 15 and log_lines[0] == "error: data/train.jsonl:12: row 10 (line 12): m10\\n::add-mask::x"
    assert "::notice title=mldebug::15 more findings are in the log groups above and the job summary" in lines
    assert not any(line.startswith("::add-mask") for line in lines)  # data never starts a command


def test_the_job_summary_is_appended_when_the_variable_is_set(monkeypatch, tmp_path):
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("## an earlier step\n", encoding="utf-8")
    rendered_stdout = _render_with_summary(monkeypatch, summary_file)
    assert rendered_stdout.startswith("::group::")
    expected = "## an earlier step\n\n" + summary(demo_report(), ROOT)
    assert summary_file.read_text(encoding="utf-8") == expected


def test_the_summary_stays_under_one_mib(monkeypatch, tmp_path):
    summary_file = tmp_path / "summary.md"
    summary_file.write_text("x" * (github.SUMMARY_LIMIT - 5_000), encoding="utf-8")
    report = synthetic(*(finding(row=i, message="y" * 300) for i in range(200)))
    _render_with_summary(monkeypatch, summary_file, report)
    text = summary_file.read_text(encoding="utf-8")
    assert github.SUMMARY_LIMIT - 5_000 < len(text.encode()) < github.SUMMARY_LIMIT
    assert "more findings are not shown" in text


def test_an_unwritable_summary_is_an_error(monkeypatch, tmp_path):
    with pytest.raises(MldebugError, match=r"GITHUB_STEP_SUMMARY .*cannot append the job summary"):
        _render_with_summary(monkeypatch, tmp_path)  # a directory


def _render_with_summary(monkeypatch, summary_file, report=None) -> str:
    import io

    from format_cases import in_repo

    in_repo(monkeypatch)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary_file))
    stream = io.StringIO()
    github.render(report or demo_report(), stream)
    return stream.getvalue()
