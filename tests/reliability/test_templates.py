"""Hostile chat templates: every render is sandboxed and bounded, and the row gets a DS009 finding saying why.

Rendered through `mldebug inspect-data --chat-template` on the first two Alpaca demo rows (lines 2 and 7),
and through `mldebug render` for each engine.
"""

from __future__ import annotations

import sys

import pytest

from mldebug_cli.render.chat import MAX_BUILT_LENGTH
from outcomes import HOSTILE, assert_one_line_error, findings, run_cli, run_cli_process, unchanged
from support import ALPACA, QWEN25, needs_corpus

TEMPLATES = HOSTILE / "templates"
MESSAGES = HOSTILE / "messages.json"
SHORT_LIMIT = "import mldebug_cli.render.chat as chat; chat.DEFAULT_LIMITS = chat.RenderLimits(seconds=1.0)"
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the render memory limit is enforced on Linux")


def inspect_two_rows(template):
    with unchanged(template, ALPACA):
        return run_cli("inspect-data", ALPACA, "-t", QWEN25, "--framework", "transformers", "--rows", "0-1", "--chat-template", template, "-f", "json")


def ds009_on_both_rows(message: str) -> list[tuple]:
    return [("DS009", "template-error", row, line, f"the chat template raised: {message}") for row, line in ((0, 2), (1, 7))]


@needs_corpus
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("huge_string.jinja", f"'*' would build 10,000,000,000 characters (limit {MAX_BUILT_LENGTH:,})"),
        ("huge_integer.jinja", "the integer result of '**' would have about 1,549,681,956 bits (limit 1,048,576)"),
        ("doubling_string.jinja", f"'~' built 67,108,864 characters (limit {MAX_BUILT_LENGTH:,})"),
        ("huge_output.jinja", "the template produced 80,000,000 characters, more than the 32 MiB render limit"),
    ],
)
def test_broken_and_oversized_templates_are_findings_on_every_row(name, message):
    result = inspect_two_rows(TEMPLATES / name)
    assert result.exit_code == 1
    assert findings(result.stdout) == ds009_on_both_rows(message)


@needs_corpus
def test_a_template_with_a_syntax_error_is_one_error_line():
    template = TEMPLATES / "syntax_error.jinja"
    result = inspect_two_rows(template)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {template}: the chat template does not compile: line 1: Unexpected end of template. Jinja was looking"
        " for the following tags: 'endfor' or 'else'. The innermost block that needs to be closed is 'for'.")


@needs_corpus
@LINUX
def test_a_filter_allocating_gigabytes_in_one_call_is_refused_before_it_allocates():
    result = inspect_two_rows(TEMPLATES / "center_filter.jinja")
    assert result.exit_code == 1
    assert findings(result.stdout) == ds009_on_both_rows(
        f"'center' would build 10,000,000,000 characters (limit {MAX_BUILT_LENGTH:,})")


@needs_corpus
def test_a_template_that_loops_forever_stops_at_the_time_limit_and_then_is_given_up(tmp_path):
    """The probe render and row 0 each time out; after two timeouts the template is not rendered again."""
    template = TEMPLATES / "infinite_loop.jinja"
    with unchanged(template, ALPACA):
        code, stdout, stderr, _ = run_cli_process(
            "inspect-data", ALPACA, "-t", QWEN25, "--framework", "transformers", "--rows", "0-2", "--chat-template", template, "-f", "json",
            prelude=SHORT_LIMIT,
        )
    assert code == 1, stderr
    given_up = "not rendered: the template exceeded the 1 s render limit 2 times already"
    assert findings(stdout) == [
        ("DS009", "template-error", 0, 2, "the chat template raised: the template exceeded the 1 s render limit"),
        ("DS009", "template-error", 1, 7, f"the chat template raised: {given_up}"),
        ("DS009", "template-error", 2, 12, f"the chat template raised: {given_up}"),
    ]


@needs_corpus
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("escape_subclasses.jinja", "access to attribute '__class__' of 'str' object is unsafe."),
        ("escape_cycler_globals.jinja", "access to attribute '__init__' of 'type' object is unsafe."),
        ("escape_joiner_globals.jinja", "access to attribute '__init__' of 'type' object is unsafe."),
        ("escape_namespace_init.jinja", "access to attribute '__init__' of 'type' object is unsafe."),
        ("escape_lipsum_globals.jinja", "access to attribute '__globals__' of 'function' object is unsafe."),
        ("escape_raise_exception_globals.jinja", "access to attribute '__globals__' of 'function' object is unsafe."),
        ("escape_format_string.jinja", "access to attribute '__class__' of 'str' object is unsafe."),
        ("escape_template_context.jinja",
         "access to attribute '_TemplateReference__context' of 'TemplateReference' object is unsafe."),
        ("escape_dict_class.jinja", "access to attribute '__class__' of 'TemplateDict' object is unsafe."),
        ("escape_mutate_messages.jinja", "access to attribute 'append' of 'list' object is unsafe."),
        ("escape_namespace_dunder.jinja", "Chat templates cannot store underscore-prefixed attributes on a namespace, "
         "but got '__class__'. Please rename the attribute."),
    ],
)
def test_sandbox_escapes_are_refused_and_run_nothing(tmp_path, monkeypatch, name, message):
    """Each payload would create a file in the working directory if it ever ran."""
    monkeypatch.chdir(tmp_path)
    result = inspect_two_rows(TEMPLATES / name)
    assert result.exit_code == 1
    assert findings(result.stdout) == ds009_on_both_rows(f"SecurityError: {message}")
    assert list(tmp_path.iterdir()) == []


# minijinja stops 'a' * 10**10 by its size check (2.x) or its instruction budget (3.x); mldebug words either limit.
MINIJINJA_LIMITS = ("ran more than minijinja's budget of 50,000,000 instructions",
                    "built a string or sequence larger than minijinja allows")

@pytest.mark.parametrize(
    ("name", "engine", "message"),
    [
        ("huge_string.jinja", "transformers", f"'*' would build 10,000,000,000 characters (limit {MAX_BUILT_LENGTH:,})"),
        ("huge_string.jinja", "llamacpp", "{template}: the template tried an operation the sandbox forbids (repetition "
         "result is too large)"),
        ("huge_string.jinja", "tgi", "{template}: the template {minijinja_limit}"),
        ("escape_cycler_globals.jinja", "transformers", "SecurityError: access to attribute '__init__' of 'type' object "
         "is unsafe."),
        ("escape_cycler_globals.jinja", "llamacpp", "{template}: the template tried an operation the sandbox forbids "
         "(access to attribute '__init__' of 'type' object is unsafe.)"),
        ("escape_cycler_globals.jinja", "tgi", "{template}: minijinja failed to render the template (undefined value: "
         "`cycler.__init__` is undefined (in <string>:1))"),
    ],
)
def test_every_render_engine_refuses_hostile_templates(tmp_path, monkeypatch, name, engine, message):
    monkeypatch.chdir(tmp_path)
    template = TEMPLATES / name
    with unchanged(template, MESSAGES):
        result = run_cli("render", "--template", template, "-m", MESSAGES, "-e", engine)
    details = [message.format(template=template, minijinja_limit=limit) for limit in MINIJINJA_LIMITS]
    detail = next((d for d in details if d in result.stderr), details[0])  # one wording per minijinja release
    assert_one_line_error(result.exit_code, result.stderr, f"{template}: {engine} cannot render {MESSAGES}: {detail}")
    assert list(tmp_path.iterdir()) == []


@LINUX
@pytest.mark.parametrize(
    ("name", "engine", "detail"),
    [
        ("doubling_string.jinja", "llamacpp", "the template tried an operation the sandbox forbids ('~' result is too "
         "large)"),
        ("doubling_string.jinja", "tgi", "the template used more than the 1024 MiB render memory limit"),
        ("center_filter.jinja", "llamacpp", "the template tried an operation the sandbox forbids ('center' would build "
         "10,000,000,000 characters (limit 8,000,000))"),
    ],
)
def test_other_engines_bound_the_memory_a_template_takes(engine, name, detail):
    """mldebug may grow 2 GiB at most, so the machine is safe even if a limit fails; TGI renders in a child process."""
    template = TEMPLATES / name
    code, _, stderr, _ = run_cli_process(
        "render", "--template", template, "-m", MESSAGES, "-e", engine,
        prelude="import resource; resource.setrlimit(resource.RLIMIT_DATA, (2 * 2**30, resource.RLIM_INFINITY))",
    )
    assert_one_line_error(code, stderr, f"{template}: {engine} cannot render {MESSAGES}: {template}: {detail}")
