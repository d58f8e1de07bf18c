"""No raw control byte from an input reaches text, GitHub or Markdown output or an error line; under GitHub
Actions no line of text output starts a workflow command."""

from __future__ import annotations

import json
import re

import pytest

from mldebug_cli.core.escape import no_workflow_commands, visible
from outcomes import run_cli
from support import QWEN25

HOSTILE_TEXT = "hi \x1b]0;pwned\x07 \x1b[2J \x9b31m \x1b]52;c;SGVsbG8=\x07 \x00\x7f\r\n::set-env name=X::1"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # mldebug's own colours, only with --color always


def test_visible_shows_every_control_but_newline_and_tab():
    assert visible("a\x1bb\x07\tc\nd\x9b\x7f\r") == "a\\x1bb\\x07\tc\nd\\x9b\\x7f\\x0d"
    assert visible("plain text ✓") == "plain text ✓"


def test_workflow_commands_are_neutralised_at_line_start_only():
    assert no_workflow_commands("a ::b\n::set-env x\n  ::error::y\n\x1b[1m::warning") == \
        "a ::b\n\\::set-env x\n  \\::error::y\n\x1b[1m\\::warning"


@pytest.fixture
def hostile_dataset(tmp_path):
    path = tmp_path / "d.jsonl"
    row = {"messages": [{"role": "user", "content": HOSTILE_TEXT}, {"role": "assistant", "content": "4"}],
           HOSTILE_TEXT: 1}
    path.write_text(json.dumps(row) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["text", "github", "markdown"])
def test_human_formats_carry_no_raw_control_byte(hostile_dataset, fmt, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = run_cli("inspect-data", hostile_dataset, "-t", QWEN25, "-f", fmt, "--rows", "0")
    assert result.exit_code in (0, 1), result.stderr
    assert not RAW_CONTROL.search(result.stdout), repr(RAW_CONTROL.search(result.stdout))
    assert not any(line.lstrip().startswith("::set-env") for line in result.stdout.splitlines())


def test_colour_output_keeps_only_mldebugs_own_codes(hostile_dataset):
    result = run_cli("inspect-data", hostile_dataset, "-t", QWEN25, "-f", "text", "--rows", "0", "--color", "always")
    assert SGR.search(result.stdout)
    assert not RAW_CONTROL.search(SGR.sub("", result.stdout))


def test_an_error_line_naming_a_hostile_file_name_is_escaped(tmp_path):
    path = tmp_path / "\x1b]0;title\x07.jsonl"
    result = run_cli("inspect-data", path, "-t", QWEN25)
    assert result.exit_code == 2
    assert not RAW_CONTROL.search(result.stderr)
    assert "\\x1b]0;title\\x07.jsonl" in result.stderr


def test_watch_lines_are_escaped(tmp_path, monkeypatch):
    from mldebug_cli.cli import check_run as command

    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert command._watch_line("error RN001 zero-loss: key '\x1b[2J'\n::set-env x") == \
        "error RN001 zero-loss: key '\\x1b[2J' ::set-env x\n"


@pytest.mark.parametrize("github", [True, False])
def test_render_under_github_actions_starts_no_line_with_a_workflow_command(tmp_path, monkeypatch, github):
    """The rendered prompt keeps its bytes, except that under GitHub Actions no line (after a newline or a carriage
    return) starts with ``::``; elsewhere it is byte for byte."""
    if github:
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    else:
        monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    messages = tmp_path / "m.json"
    content = "::add-mask::secret\n  ::set-env name=X::1\rx\r::error::boom"
    messages.write_text(json.dumps([{"role": "user", "content": content}]))
    result = run_cli("render", "-m", messages, "-t", QWEN25)
    assert result.exit_code == 0, result.stderr
    if github:
        assert "\\::add-mask::secret\n  \\::set-env name=X::1\rx\r\\::error::boom" in result.stdout
        assert not any(line.lstrip().startswith("::") for line in result.stdout.replace("\r", "\n").splitlines())
    else:
        assert content in result.stdout
