"""The Go-template interpreter on random templates and data: it renders or raises TemplateError, within its limits."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mldebug_cli.render.gotemplate import Limits, TemplateError, parse
from mldebug_cli.render.ollama import TEMPLATE_FUNC_NAMES, parse_template, render, template_funcs

SMALL = Limits(max_output_chars=20_000, max_steps=20_000, max_depth=8)
FIELDS = ("Messages", "Role", "Content", "System", "Prompt", "Response", "Tools", "ToolCalls", "Name", "X")
FUNCS = ("len", "index", "slice", "eq", "ne", "lt", "le", "gt", "ge", "not", "and", "or", "print", "printf",
         "println", "html", "js", "urlquery", "call", "json")
VERBS = ("%v", "%d", "%s", "%q", "%x", "%5.2f", "%-3s", "%T", "%*d", "%!", "%%", "%08.3e", "%U", "%c", "%t")

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=8)
go_data = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELDS + ("", "a b")), inner, max_size=3),
    max_leaves=12,
)


@st.composite
def operands(draw, depth: int) -> str:
    choices = [
        st.just("."), st.just("$"), st.sampled_from([f".{f}" for f in FIELDS] + ["$.Messages", ".Messages.Role"]),
        st.integers(-10, 10**3).map(str), st.sampled_from(['"a"', '"%v"', "`raw`", "nil", "true", "1.5", "0x1F", "'x'"]),
        st.sampled_from(["$m", "$i", "$x"]),
    ]
    if depth > 0:
        choices.append(pipelines(depth - 1).map(lambda p: f"({p})"))
    return draw(st.one_of(choices))


@st.composite
def pipelines(draw, depth: int = 1) -> str:
    command = draw(st.one_of(
        operands(depth),
        st.tuples(st.sampled_from(FUNCS), st.lists(operands(depth), max_size=3)).map(lambda t: " ".join([t[0], *t[1]])),
        st.tuples(st.sampled_from(VERBS), st.lists(operands(depth), max_size=2)).map(
            lambda t: " ".join(["printf", f'"{t[0]}"', *t[1]])),
    ))
    if draw(st.booleans()):
        command += " | " + draw(st.sampled_from(["print", "len", "html", "printf \"%v\"", "not", "json"]))
    return command


@st.composite
def templates(draw, depth: int = 2) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text", "action", "assign", "if", "range", "with", "define", "control", "junk"]))
        trim_left, trim_right = draw(st.sampled_from(["{{", "{{- "])), draw(st.sampled_from(["}}", " -}}"]))
        body = draw(templates(depth - 1)) if depth > 0 else ""
        pipe = draw(pipelines())
        parts.append({
            "text": draw(st.text(alphabet="ab \n{}-", max_size=6)),
            "action": f"{trim_left}{pipe}{trim_right}",
            "assign": f"{{{{ $x := {pipe} }}}}{{{{ $x = {pipe} }}}}",
            "if": f"{{{{ if {pipe} }}}}{body}{{{{ else if {pipe} }}}}x{{{{ else }}}}y{{{{ end }}}}",
            "range": f"{{{{ range $i, $m := {pipe} }}}}{body}{{{{ break }}}}{{{{ else }}}}e{{{{ end }}}}",
            "with": f"{{{{ with $m := {pipe} }}}}{body}{{{{ else with {pipe} }}}}w{{{{ end }}}}",
            "define": f'{{{{ define "t" }}}}{body}{{{{ template "t" . }}}}{{{{ end }}}}{{{{ template "t" {pipe} }}}}',
            "control": draw(st.sampled_from(["{{ break }}", "{{ continue }}", "{{ end }}", "{{ else }}", "{{/* c */}}"])),
            "junk": draw(st.text(alphabet='{}$."|()- :=`abc\\', max_size=12)),
        }[kind])
    return "".join(parts)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=templates(), data=go_data)
def test_random_templates_render_or_fail_with_a_template_error(source, data):
    try:
        template = parse(source, TEMPLATE_FUNC_NAMES)
        out = template.execute(data, funcs=template_funcs_for_tests(), limits=SMALL)
    except TemplateError as exc:
        event(type(exc).__name__)
        assert str(exc) and "\n" not in str(exc).strip()
        return
    event("rendered")
    assert isinstance(out, str) and len(out) <= SMALL.max_output_chars


@settings(max_examples=200, deadline=None)
@given(source=st.text(max_size=60))
def test_any_text_parses_or_fails_with_a_template_error(source):
    try:
        parse_template(source)
    except TemplateError:
        pass


messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.text(max_size=20)},
        optional={"thinking": st.text(max_size=5), "images": st.lists(st.just("aGk="), max_size=1)},
    ),
    max_size=5,
)


@pytest.mark.parametrize("template", [
    "{{ range .Messages }}{{ .Role }}: {{ .Content }}\n{{ end }}",
    "{{- range $i, $_ := .Messages }}{{ if eq (len (slice $.Messages $i)) 1 }}last:{{ end }}{{ .Content }}{{ end }}",
])
@settings(max_examples=100, deadline=None)
@given(conversation=messages, system=st.none() | st.text(max_size=10))
def test_every_message_of_a_random_conversation_reaches_a_messages_template(template, conversation, system):
    """Ollama merges consecutive same-role messages with a blank line, so each content is still in the prompt."""
    out = render(template, conversation, system=system, limits=SMALL)
    assert all(m["content"] in out for m in conversation)


@settings(max_examples=100, deadline=None)
@given(conversation=messages, system=st.none() | st.text(max_size=10))
def test_random_conversations_through_a_legacy_template_render(conversation, system):
    """Legacy .Prompt/.Response templates run once per turn (and drop what Ollama drops), without failing."""
    assert isinstance(render("{{ if .System }}{{ .System }}{{ end }}{{ .Prompt }}{{ .Response }}", conversation,
                             system=system, limits=SMALL), str)


def template_funcs_for_tests():
    from datetime import date

    return template_funcs(date(2025, 1, 15))
