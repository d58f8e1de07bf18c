"""Ollama Modelfiles whose TEMPLATE is broken or hostile: a one-line error naming file and position, no hang."""

from __future__ import annotations

import pytest

from outcomes import HOSTILE, assert_one_line_error, run_cli, unchanged

OLLAMA = HOSTILE / "ollama"
MESSAGES = HOSTILE / "messages.json"
REFUSED_TOO = "ollama create refuses it too"


@pytest.mark.parametrize(
    ("name", "message", "hint"),
    [
        ("unclosed_if.Modelfile", "TEMPLATE does not parse: template line 1:90: unexpected EOF", REFUSED_TOO),
        ("stray_end.Modelfile", "TEMPLATE does not parse: template line 1:52: unexpected {{end}}", REFUSED_TOO),
        ("unterminated_quote.Modelfile", None, None),
    ],
)
def test_unbalanced_template_actions_are_refused_as_ollama_refuses_them(name, message, hint):
    path = OLLAMA / name
    with unchanged(path):
        result = run_cli("render", "--modelfile", path, "-m", MESSAGES)
    expected = f"{path}: {message}" if message else f'{path}:2: unterminated quoted value: no closing """ or " before the end of the file'
    assert_one_line_error(result.exit_code, result.stderr, expected, hint)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("endless_range.Modelfile", "template line 1:57: execution exceeded 2,000,000 steps"),
        ("huge_output.Modelfile", "template output exceeded 8,000,000 characters"),
        ("self_recursive.Modelfile", "template line 1:29: exceeded maximum template depth (64)"),
    ],
)
def test_runaway_templates_stop_at_the_interpreters_limits(name, message):
    path = OLLAMA / name
    with unchanged(path, MESSAGES):
        result = run_cli("render", "--modelfile", path, "-m", MESSAGES)
    assert_one_line_error(result.exit_code, result.stderr, f"{path} (TEMPLATE): ollama cannot render {MESSAGES}: {message}")


def test_a_from_name_too_long_for_the_file_system_is_a_model_name_not_an_internal_error():
    path = OLLAMA / "long_from.Modelfile"
    with unchanged(path):
        result = run_cli("render", "--modelfile", path, "-m", MESSAGES)
    assert "internal error" not in result.stderr and len(result.stderr.splitlines()) <= 1
