"""Go text/template semantics, as documented for Go's text/template, fmt and encoding/json.

Expected strings are what Go prints for the same template and data (Go's rules, written out by hand).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.render.gotemplate import (
    Limits,
    TemplateExecError,
    TemplateFunc,
    TemplateLimitError,
    TemplateSyntaxError,
    go_json,
    identifiers,
    parse,
)

DATA = {
    "Name": "Ada",
    "Empty": "",
    "Zero": 0,
    "Float": 1.5,
    "List": ["x", "y", "z", "w"],
    "None": [],
    "Map": {"b": 2, "a": 1.5},
    "Nested": {"Inner": {"Leaf": "deep"}},
    "Nil": None,
    "Messages": [{"Role": "system", "Content": "S"}, {"Role": "user", "Content": "U"}],
}


def render(source: str, data: object = DATA, **kwargs: object) -> str:
    return parse(source, kwargs.pop("func_names", ())).execute(data, **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------- text and trimming


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a  {{- .Name }}  b", "aAda  b"),
        ("a  {{ .Name -}}  \n\t b", "a  Adab"),
        ("a \n {{- .Name -}} \n b", "aAdab"),
        ("{{-3}}", "-3"),  # no space after the dash: a negative number, not a trim marker
        ("{{ 3 -}} x", "3x"),
        ("x {{- /* a comment */ -}} y", "xy"),
        ("x {{/* a comment\nover lines */}} y", "x  y"),
        ("{{ `raw \\n {{ string` }}", "raw \\n {{ string"),
        ('{{ "tab\\tquote\\"" }}', 'tab\tquote"'),
        ("{{ 'a' }} {{ 0x1F }} {{ 010 }} {{ 1_000 }}", "97 31 8 1000"),
    ],
)
def test_text_trimming_comments_and_literals(source: str, expected: str) -> None:
    assert render(source) == expected


# -------------------------------------------------------------------------------------------- control flow


@pytest.mark.parametrize(
    ("value", "expected"),
    [("system", "S"), ("user", "U"), ("assistant", "A"), ("tool", "other")],
)
def test_else_if_chain_takes_the_first_true_branch(value: str, expected: str) -> None:
    source = (
        '{{ if eq .R "system" }}S{{ else if eq .R "user" }}U{{- else if eq .R "assistant" }}A{{ else }}other{{ end }}'
    )
    assert render(source, {"R": value}) == expected


@pytest.mark.parametrize("falsy", [False, 0, 0.0, "", [], {}, None])
def test_go_truthiness_of_empty_values(falsy: object) -> None:
    assert render("{{ if .V }}yes{{ else }}no{{ end }}", {"V": falsy}) == "no"


def test_range_with_index_and_element_variables() -> None:
    assert render("{{ range $i, $m := .Messages }}{{ $i }}:{{ $m.Role }}={{ .Content }};{{ end }}") == (
        "0:system=S;1:user=U;"
    )


def test_range_else_runs_only_for_empty_collections() -> None:
    source = "{{ range .V }}[{{ . }}]{{ else }}empty{{ end }}"
    assert render(source, {"V": []}) == "empty"
    assert render(source, {"V": None}) == "empty"
    assert render(source, {"V": ["a"]}) == "[a]"


def test_range_over_a_map_visits_keys_in_sorted_order() -> None:
    assert render("{{ range $k, $v := .Map }}{{ $k }}={{ $v }} {{ end }}") == "a=1.5 b=2 "


def test_range_over_an_integer_counts_from_zero() -> None:
    assert render("{{ range $i := 3 }}{{ $i }}{{ end }}") == "012"


def test_break_and_continue_inside_range() -> None:
    source = "{{ range $i, $v := .List }}{{ if eq $i 1 }}{{ continue }}{{ end }}{{ if eq $i 3 }}{{ break }}{{ end }}{{ $v }}{{ end }}"
    assert render(source) == "xz"


def test_slice_of_messages_from_index_finds_the_last_one() -> None:
    source = "{{ range $i, $_ := .Messages }}{{ $last := eq (len (slice $.Messages $i)) 1 }}{{ $last }} {{ end }}"
    assert render(source) == "false true "


def test_nested_with_rebinds_dot_and_else_with_chains() -> None:
    assert render("{{ with .Nested }}{{ with .Inner }}{{ .Leaf }}{{ end }}{{ end }}") == "deep"
    assert render("{{ with .Nil }}a{{ else with .Name }}{{ . }}{{ else }}c{{ end }}") == "Ada"
    assert render("{{ with $n := .Name }}{{ $n }}!{{ end }}") == "Ada!"


def test_assignment_updates_the_outer_variable_and_declarations_are_scoped() -> None:
    source = (
        '{{ $s := "" }}{{ range .Messages }}{{ if eq .Role "system" }}{{ $s = .Content }}{{ end }}{{ end }}[{{ $s }}]'
    )
    assert render(source) == "[S]"
    with pytest.raises(TemplateSyntaxError, match=r"line 1:\d+: undefined variable \"\$y\""):
        parse("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}")


def test_dollar_is_the_root_inside_range() -> None:
    assert render("{{ range .List }}{{ $.Name }}{{ end }}") == "AdaAdaAdaAda"


def test_define_template_and_block() -> None:
    source = '{{ define "item" }}<{{ . }}>{{ end }}{{ range .List }}{{ template "item" . }}{{ end }}|{{ block "b" .Name }}[{{ . }}]{{ end }}'
    assert render(source) == "<x><y><z><w>|[Ada]"


# ---------------------------------------------------------------------------------------- missing values


def test_missing_map_key_prints_no_value_and_is_false() -> None:
    assert render("[{{ .Missing }}]") == "[<no value>]"
    assert render("{{ if .Missing }}y{{ else }}n{{ end }}") == "n"
    assert render('{{ index .Map "zz" }}') == "<no value>"


def test_field_of_a_missing_key_is_an_error_as_in_go() -> None:
    with pytest.raises(TemplateExecError, match=r"line 1:4: .*nil pointer evaluating interface \{\}\.X"):
        render("{{ .Missing.X }}")


def test_field_of_a_non_map_value_is_an_error() -> None:
    with pytest.raises(TemplateExecError, match="can't evaluate field Leaf in type string"):
        render("{{ .Name.Leaf }}")


# ----------------------------------------------------------------------------------------- comparisons


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('{{ eq .Name "Ada" }}', "true"),
        ('{{ eq .Name "x" "y" "Ada" }}', "true"),  # eq with several arguments: equal to any
        ("{{ ne 1 2 }}", "true"),
        ('{{ lt "a" "b" }} {{ le 2 2 }} {{ gt 1.5 0.5 }} {{ ge 1 2 }}', "true true true false"),
        ('{{ eq .Nil "x" }}', "false"),  # nil against a value is false, not an error
        ("{{ eq .Float 1.5 }}", "true"),
    ],
)
def test_comparisons(source: str, expected: str) -> None:
    assert render(source) == expected


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ eq 1 1.0 }}", "incompatible types for comparison"),  # int vs float64
        ('{{ lt 1 "1" }}', "incompatible types for comparison"),
        ("{{ lt true false }}", "invalid type for comparison"),
        ("{{ eq .List .List }}", "non-comparable type"),
        ("{{ eq 1 }}", "missing argument for comparison"),
    ],
)
def test_comparison_errors_on_mixed_or_uncomparable_kinds(source: str, message: str) -> None:
    with pytest.raises(TemplateExecError, match=re.escape(message)):
        render(source)


def test_and_or_return_an_operand_and_short_circuit() -> None:
    assert render('{{ and 1 0 2 }}|{{ and 1 2 }}|{{ or 0 "" }}|{{ or 0 .Name }}') == "0|2||Ada"
    assert render("{{ or .Name .Missing.X }}") == "Ada"  # the erroring operand is never evaluated
    assert render("{{ not .Empty }} {{ not .List }}") == "true false"


# -------------------------------------------------------------------------------------------- builtins


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('{{ len "héllo" }}', "6"),  # bytes, not characters
        ("{{ len .List }} {{ len .Map }}", "4 2"),
        ('{{ index .List 1 }} {{ index .Map "a" }} {{ index "abc" 1 }}', "y 1.5 98"),
        ("{{ slice .List 1 3 }} {{ slice .List 2 }}", "[y z] [z w]"),
        ('{{ slice "hello" 1 3 }}', "el"),
        ('{{ print 1 2 "a" "b" 3 }}', "1 2ab3"),  # spaces only between two non-strings
        ('{{ println 1 "a" }}', "1 a\n"),
        ('{{ html "<a href=\'x\'>&\\"" }}', "&lt;a href=&#39;x&#39;&gt;&amp;&#34;"),
        ('{{ js "<\'\\n=" }}', "\\u003C\\'\\u000A\\u003D"),
        ('{{ urlquery "a b&c/é" }}', "a+b%26c%2F%C3%A9"),
        ('{{ "x" | printf "%s-%s" "y" }}', "y-x"),  # the piped value is the last argument
        ("{{ .List | len }}", "4"),
        ("{{ .Map }} {{ .List }} {{ .Nested }}", "map[a:1.5 b:2] [x y z w] map[Inner:map[Leaf:deep]]"),
    ],
)
def test_builtin_functions(source: str, expected: str) -> None:
    assert render(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('{{ printf "%s|%d|%v|%q|%t" "a" 42 .Float "q\\"" true }}', 'a|42|1.5|"q\\""|true'),
        (
            '{{ printf "%5d|%-5d|%05d|%+d|%x|%X|%o|%b|%c|%U" 42 42 -42 7 255 255 8 5 65 9731 }}',
            "   42|42   |-0042|+7|ff|FF|10|101|A|U+2603",
        ),
        (
            '{{ printf "%.2f|%8.3f|%e|%g|%v" 3.14159 2.5 1234.5 0.000012 1e6 }}',
            "3.14|   2.500|1.234500e+03|1.2e-05|1e+06",
        ),
        ('{{ printf "%-6s|%6s|%.2s" "ab" "ab" "abc" }}', "ab    |    ab|ab"),
        ('{{ printf "%d %s" "x" 3 }}', "%!d(string=x) %!s(int=3)"),
        ('{{ printf "%d %d" 1 }}', "1 %!d(MISSING)"),
        ('{{ printf "hi" 1 "x" }}', "hi%!(EXTRA int=1, string=x)"),
        ('{{ printf "%v|%s" .Nil .Nil }}', "<nil>|%!s(<nil>)"),
        ('{{ printf "%s" .List }}', "[x y z w]"),
        ('{{ printf "100%%" }}', "100%"),
    ],
)
def test_printf_verbs_and_error_forms(source: str, expected: str) -> None:
    assert render(source) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (1e6, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-2.5, "-2.5"),
        (float("inf"), "+Inf"),
    ],
)
def test_floats_print_like_go(value: float, expected: str) -> None:
    assert render("{{ .V }}", {"V": value}) == expected


def test_go_json_encoding() -> None:
    value = {"b": [1, 2.0, 1e21, 1e-7], "a": "<&>\u2028\n", "c": None, "d": True}
    assert go_json(value) == '{"a":"\\u003c\\u0026\\u003e\\u2028\\n","b":[1,2,1e+21,1e-7],"c":null,"d":true}'


def test_custom_functions_and_their_signatures() -> None:
    upper = TemplateFunc(lambda s: s.upper(), ("string",))
    assert render("{{ up .Name }}", func_names=("up",), funcs={"up": upper}) == "ADA"
    with pytest.raises(TemplateExecError, match="wrong type for value; expected string; got int"):
        render("{{ up 3 }}", func_names=("up",), funcs={"up": upper})
    with pytest.raises(TemplateExecError, match="wrong number of args for up: want 1 got 2"):
        render("{{ up .Name .Name }}", func_names=("up",), funcs={"up": upper})


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("source", "position", "message"),
    [
        ("hello\n{{ if .X }}never closed", "2:", "unexpected EOF"),
        ("{{ .Name ", "1:1", "unclosed action"),
        ("ok {{ end }}", "1:", "unexpected {{end}}"),
        ("{{ else }}", "1:", "unexpected {{else}}"),
        ("{{ if .A }}{{ else }}{{ else }}{{ end }}", "1:", "expected end; found {{else}}"),
        ("{{/* open", "1:1", "unclosed comment"),
        ("{{ nope .A }}", "1:4", 'function "nope" not defined'),
        ("{{ $x }}", "1:4", 'undefined variable "$x"'),
        ("{{ break }}", "1:4", "{{break}} outside {{range}}"),
        ('{{ "open }}', "1:4", "unterminated quoted string"),
        ("{{ .A | 3 }}", "1:", "non executable command in pipeline stage 2"),
        ("{{ ) }}", "1:4", "unexpected right paren"),
        ("{{ }}", "1:", "missing value for command"),
    ],
)
def test_syntax_errors_name_line_and_column(source: str, position: str, message: str) -> None:
    with pytest.raises(TemplateSyntaxError) as caught:
        parse(source)
    text = str(caught.value)
    assert f"line {position}" in text and message in text
    assert "\n" not in text and isinstance(caught.value, InputError)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ 1 2 }}", "can't give argument to non-function 1"),
        ("{{ .Name 1 }}", "Name is not a method but has arguments"),
        ('{{ template "nope" }}', 'template "nope" not defined'),
        ("{{ index .List 9 }}", "error calling index: index out of range: 9"),
        ("{{ len 3 }}", "error calling len: len of type int"),
        ('{{ range "abc" }}{{ end }}', "range can't iterate over abc"),
    ],
)
def test_execution_errors(source: str, message: str) -> None:
    with pytest.raises(TemplateExecError, match=r"^template line 1:\d+: .*" + re.escape(message)):
        render(source)


@pytest.mark.parametrize(
    "source",
    [
        "{{ range 100000000 }}{{ end }}",
        "{{ range 1000000 }}xxxxxxxxxxxx{{ end }}",
        '{{ define "a" }}{{ template "a" }}{{ end }}{{ template "a" }}',
        '{{ $x := "ab" }}{{ range 64 }}{{ $x = printf "%s%s" $x $x }}{{ end }}',
        '{{ printf "%999999999d" 1 }}',
    ],
)
def test_hostile_templates_hit_a_limit(source: str) -> None:
    limits = Limits(max_output_chars=1_000_000, max_steps=200_000, max_depth=32)
    with pytest.raises(TemplateLimitError):
        render(source, limits=limits)


def test_nesting_deeper_than_the_parser_allows_is_refused() -> None:
    assert parse("{{ if 1 }}" * 100 + "ok" + "{{ end }}" * 100).execute({}) == "ok"
    with pytest.raises(TemplateSyntaxError, match="nested deeper than 100"):
        parse("{{ if 1 }}" * 101 + "{{ end }}" * 101)
    with pytest.raises(TemplateSyntaxError, match="nested deeper than 100"):
        parse("{{ " + "(" * 101 + "1" + ")" * 101 + " }}")


def test_identifiers_lists_fields_and_variables() -> None:
    tree = parse('{{ define "t" }}{{ .Inner }}{{ end }}{{ range $i, $m := .Messages }}{{ $.System }}{{ end }}')
    assert identifiers(tree) == ["Messages", "$", "System", "Inner"]


TEMPLATE_PIECES = st.sampled_from(
    [
        "{{",
        "}}",
        "{{- ",
        " -}}",
        " ",
        "if",
        "else",
        "end",
        "range",
        "with",
        "$x",
        ":=",
        "=",
        ".",
        ".List",
        ".Map",
        "(",
        ")",
        "|",
        '"s"',
        "`r`",
        "'c'",
        "1",
        "-2",
        "3.5",
        "eq",
        "and",
        "not",
        "len",
        "index",
        "slice",
        "printf",
        "break",
        "define",
        "template",
        '"t"',
        "nil",
        ",",
        "/*",
        "*/",
        "\n",
        "$",
        "{{ range $i, $v := .List }}",
        "{{ end }}",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEMPLATE_PIECES, max_size=16))
def test_arbitrary_template_text_renders_or_raises_an_input_error(pieces: list[str]) -> None:
    try:
        assert isinstance(render("".join(pieces), limits=Limits(max_steps=20_000)), str)
    except InputError:
        pass
