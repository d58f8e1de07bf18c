"""Ollama's prompt construction, checked against Ollama's own expected renderings.

The corpus's templates/ollama/testdata and testdata-more: Ollama's template/testdata, read in place. Inline cases without a fixture come from
ollama/ollama template/template_test.go (TestExecuteWithMessages, TestExecuteWithSuffix, TestCollate).
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.render import ollama
from mldebug_cli.render.gotemplate import TemplateExecError, TemplateSyntaxError
from support import HAVE_CORPUS, OLLAMA_CORPUS, needs_corpus

FIXTURES = OLLAMA_CORPUS
CONVERSATIONS = (
    json.loads((FIXTURES / "testdata_conversations.json").read_text(encoding="utf-8"))["conversations"] if HAVE_CORPUS else {}
)
FAMILIES = ollama.family_names(FIXTURES) if HAVE_CORPUS else ()
# template_test.go strips one trailing space from these families' output before comparing.
TRAILING_SPACE_STRIPPED = {"chatqa", "llama2-chat", "mistral-instruct", "openchat", "vicuna"}


def _expected_cases(folder: Path) -> list[tuple[str, str]]:
    if not HAVE_CORPUS:
        return []
    return sorted((case.parent.name[: -len(".gotmpl")], case.name) for case in folder.glob("*.gotmpl/*"))


def _render_family(family: str, messages: list[dict[str, object]], **kwargs: object) -> str:
    out = ollama.render(ollama.load_family(family, FIXTURES).template, messages, **kwargs)  # type: ignore[arg-type]
    return out[:-1] if family in TRAILING_SPACE_STRIPPED and out.endswith(" ") else out


@needs_corpus
@pytest.mark.parametrize(("family", "case"), _expected_cases(FIXTURES / "testdata"))
def test_family_renders_ollama_testdata_byte_for_byte(family: str, case: str) -> None:
    expected = (FIXTURES / "testdata" / f"{family}.gotmpl" / case).read_bytes().decode("utf-8")
    assert _render_family(family, CONVERSATIONS[case]) == expected


@needs_corpus
@pytest.mark.parametrize(
    ("family", "case"), [c for c in _expected_cases(FIXTURES / "testdata-more") if not c[1].startswith("tools")]
)
def test_family_without_corpus_testdata_renders_upstream_expectation(family: str, case: str) -> None:
    expected = (FIXTURES / "testdata-more" / f"{family}.gotmpl" / case).read_bytes().decode("utf-8")
    assert _render_family(family, CONVERSATIONS[case]) == expected


# A weather tool (name, description, parameters), as in Ollama's template tests.
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get current weather information for a location",
        "parameters": {
            "type": "object",
            "required": ["location"],
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to use"},
            },
        },
    },
}


@needs_corpus
def test_tool_call_arguments_given_as_json_text_render_the_same() -> None:
    """Ollama's api.ToolCallFunctionArguments unmarshals JSON text into the same map a JSON object gives."""
    template = ollama.load_family("command-r", FIXTURES).template
    as_text = {"function": {"name": "get_weather", "arguments": '{"location": "San Francisco, CA"}'}}
    as_map = {"function": {"name": "get_weather", "arguments": {"location": "San Francisco, CA"}}}
    rendered = ollama.render(template, [{"role": "assistant", "tool_calls": [as_text]}])
    assert rendered == ollama.render(template, [{"role": "assistant", "tool_calls": [as_map]}])
    assert '"tool_name": "get_weather"' in rendered and '"parameters": {"location":"San Francisco, CA"}' in rendered


# ------------------------------------------------------------------------- legacy .Prompt/.Response path

MISTRAL_LEGACY = [
    "[INST] {{ if .System }}{{ .System }}\n\n{{ end }}{{ .Prompt }}[/INST] ",
    "[INST] {{ if .System }}{{ .System }}\n\n{{ end }}{{ .Prompt }}[/INST] {{ .Response }}",
    '[INST] {{ if .System }}{{ .System }}\n\n{{ end }}\n{{- range .Messages }}\n{{- if eq .Role "user" }}'
    '{{ .Content }}[/INST] {{ else if eq .Role "assistant" }}{{ .Content }}[INST] {{ end }}\n{{- end }}',
]
HELLO = [
    {"role": "user", "content": "Hello friend!"},
    {"role": "assistant", "content": "Hello human!"},
    {"role": "user", "content": "What is your name?"},
]
EXECUTE_WITH_MESSAGES = [  # template_test.go TestExecuteWithMessages
    ("mistral", MISTRAL_LEGACY, HELLO, "[INST] Hello friend![/INST] Hello human![INST] What is your name?[/INST] "),
    (
        "mistral system",
        MISTRAL_LEGACY,
        [{"role": "system", "content": "You are a helpful assistant!"}, *HELLO],
        "[INST] You are a helpful assistant!\n\nHello friend![/INST] Hello human![INST] What is your name?[/INST] ",
    ),
    (
        "mistral assistant prefill",
        [
            "[INST] {{ .Prompt }}[/INST] ",
            "[INST] {{ .Prompt }}[/INST] {{ .Response }}",
            '\n{{- range $i, $m := .Messages }}\n{{- if eq .Role "user" }}[INST] {{ .Content }}[/INST] '
            '{{ else if eq .Role "assistant" }}{{ .Content }}{{ end }}\n{{- end }}',
        ],
        [*HELLO, {"role": "assistant", "content": "My name is Ollama and I"}],
        "[INST] Hello friend![/INST] Hello human![INST] What is your name?[/INST] My name is Ollama and I",
    ),
    (
        "chatml",
        [
            "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ if .Prompt }}<|im_start|>user\n"
            "{{ .Prompt }}<|im_end|>\n{{ end }}<|im_start|>assistant\n{{ .Response }}<|im_end|>\n",
            "\n{{- range $index, $_ := .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
            "<|im_start|>assistant\n",
        ],
        [{"role": "system", "content": "You are a helpful assistant!"}, *HELLO],
        "<|im_start|>system\nYou are a helpful assistant!<|im_end|>\n<|im_start|>user\nHello friend!<|im_end|>\n"
        "<|im_start|>assistant\nHello human!<|im_end|>\n<|im_start|>user\nWhat is your name?<|im_end|>\n"
        "<|im_start|>assistant\n",
    ),
]


@pytest.mark.parametrize(
    ("template", "messages", "expected"),
    [(t, m, e) for _, templates, m, e in EXECUTE_WITH_MESSAGES for t in templates],
    ids=[f"{name}-{i}" for name, templates, _, _ in EXECUTE_WITH_MESSAGES for i in range(len(templates))],
)
def test_legacy_and_messages_templates_agree_as_in_ollama(template: str, messages: list, expected: str) -> None:
    assert ollama.render(template, messages) == expected


def test_template_without_messages_or_response_gets_response_appended() -> None:
    parsed = ollama.parse_template(ollama.DEFAULT_TEMPLATE)  # Ollama's template for models without one
    assert not parsed.uses_messages
    assert ollama.render(parsed, HELLO) == "Hello friend!Hello human!What is your name?"  # Prompt, Response, Prompt


def test_suffix_template_renders_the_prompt_without_a_suffix() -> None:  # TestExecuteWithSuffix "message"
    template = "{{- if .Suffix }}<PRE> {{ .Prompt }} <SUF>{{ .Suffix }} <MID>\n{{- else }}{{ .Prompt }}\n{{- end }}"
    assert ollama.render(template, [{"role": "user", "content": "hello"}]) == "hello"


def test_legacy_cut_tree_has_no_ollama_funcs() -> None:
    # Ollama executes the template cut after .Response as a new template without its funcs: a func after
    # .Response only runs for completed turns, one before it fails on the last turn.
    after = "{{ .Prompt }}{{ .Response }}{{ json .Prompt }}"
    assert ollama.render(after, HELLO) == 'Hello friend!Hello human!"Hello friend!"What is your name?'
    with pytest.raises(TemplateExecError, match='"json" is not a defined function'):
        ollama.render("{{ json .Prompt }}{{ .Response }}", HELLO)


def test_legacy_response_inside_a_branch_with_else_is_refused() -> None:
    with pytest.raises(TemplateExecError, match="legacy template"):
        ollama.render("{{ if .Prompt }}{{ .Response }}{{ else }}x{{ end }}", HELLO[:1])


# ----------------------------------------------------------------------------------- collate and request


@pytest.mark.parametrize(
    ("messages", "system", "collated"),
    [  # template_test.go TestCollate
        ([("user", "Hello"), ("user", "How are you?")], "", [("user", "Hello\n\nHow are you?")]),
        ([("tool", "sunny"), ("tool", "72F")], "", [("tool", "sunny"), ("tool", "72F")]),
        (
            [
                ("system", "You are helpful"),
                ("user", "Hello"),
                ("assistant", "Hi there!"),
                ("user", "What's up?"),
                ("tool", "sunny"),
                ("tool", "72F"),
                ("user", "Thanks"),
            ],
            "You are helpful",
            [
                ("system", "You are helpful"),
                ("user", "Hello"),
                ("assistant", "Hi there!"),
                ("user", "What's up?"),
                ("tool", "sunny"),
                ("tool", "72F"),
                ("user", "Thanks"),
            ],
        ),
        (
            [("system", "A"), ("user", "u"), ("system", "B")],
            "A\n\nB",
            [("system", "A"), ("user", "u"), ("system", "B")],
        ),
    ],
)
def test_collate(messages: list, system: str, collated: list) -> None:
    got_system, got = ollama.collate([ollama.Message(Role=r, Content=c) for r, c in messages])
    assert got_system == system
    assert [(m.Role, m.Content) for m in got] == collated


@needs_corpus
def test_modelfile_system_goes_first_unless_the_request_starts_with_system() -> None:
    chatml = ollama.load_family("chatml", FIXTURES).template
    out = ollama.render(chatml, HELLO[:1], system="Be brief.")
    assert out.startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello friend!")
    out = ollama.render(chatml, [{"role": "system", "content": "Mine"}, HELLO[0]], system="Be brief.")
    assert "Be brief." not in out and out.startswith("<|im_start|>system\nMine<|im_end|>")


@needs_corpus
def test_modelfile_messages_come_before_the_request() -> None:
    chatml = ollama.load_family("chatml", FIXTURES).template
    out = ollama.render(chatml, [HELLO[2]], modelfile_messages=HELLO[:2], system="S")
    roles = [line for line in out.splitlines() if line.startswith("<|im_start|>")]
    assert roles == [
        "<|im_start|>system",
        "<|im_start|>user",
        "<|im_start|>assistant",
        "<|im_start|>user",
        "<|im_start|>assistant",
    ]


def test_images_become_numbered_tags() -> None:
    messages = [
        {"role": "user", "content": "first", "images": [b"a", b"b"]},
        {"role": "user", "content": "see [img] here", "images": [b"c"]},
    ]
    out = ollama.render("{{ range .Messages }}{{ .Content }}|{{ end }}", messages)
    assert out == "[img-0][img-1]first\n\nsee [img-2] here|"


def test_roles_are_lowercased_and_think_values_reach_the_template() -> None:
    template = "{{ range .Messages }}{{ .Role }} {{ end }}{{ .Think }} {{ .ThinkLevel }} {{ .IsThinkSet }}"
    assert ollama.render(template, [{"role": "USER", "content": "x"}]) == "user false  false"
    assert ollama.render(template, [], think="high") == "true high true"
    assert ollama.render(template, [], think=False) == "false  true"
    with pytest.raises(InputError, match="think must be"):
        ollama.render(template, [], think="max")


def test_unknown_message_field_is_an_error_as_in_go() -> None:
    with pytest.raises(TemplateExecError, match=r"can't evaluate field Name in type \*api.Message"):
        ollama.render("{{ range .Messages }}{{ .Name }}{{ end }}", HELLO)


def test_bad_request_data_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"messages\[0\].content must be a string"):
        ollama.render("{{ .Messages }}", [{"role": "user", "content": 3}])
    with pytest.raises(InputError, match=r"arguments is not valid JSON"):
        ollama.render("{{ .Messages }}", [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{"}}]}])
    with pytest.raises(TemplateSyntaxError, match=r"line 1:\d+: unexpected EOF"):
        ollama.render("{{ range .Messages }}", HELLO)


# --------------------------------------------------------------------------------------- template funcs


def test_json_and_date_funcs() -> None:
    template = "{{ json .Tools }}|{{ currentDate }}|{{ yesterdayDate }}{{ range .Messages }}{{ end }}"
    out = ollama.render(template, [], tools=[WEATHER_TOOL], today=date(2026, 3, 1))
    tools_json, today, yesterday = out.split("|")
    assert (today, yesterday) == ("2026-03-01", "2026-02-28")
    # struct fields in declaration order, omitempty fields dropped, map keys sorted
    assert tools_json.startswith('[{"type":"function","function":{"name":"get_weather","description":"Get current')
    assert (
        '"parameters":{"type":"object","required":["location"],"properties":{"location":{"type":"string",' in tools_json
    )
    assert json.loads(tools_json)[0]["function"]["parameters"]["properties"]["unit"]["type"] == "string"


def test_to_typescript_type() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "f",
            "parameters": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer"},
                    "b": {"type": ["string", "null"]},
                    "c": {"anyOf": [{"type": "array"}, {"type": "object"}]},
                    "d": {},
                },
            },
        },
    }
    template = "{{ range .Tools }}{{ range $k, $p := .Function.Parameters.Properties }}{{ $k }}:{{ toTypeScriptType $p }};{{ end }}{{ end }}{{ .Messages }}"
    out = ollama.render(template, [], tools=[tool])
    assert out == "a:number;b:string | null;c:any[] | Record<string, any>;d:any;[]"


# ------------------------------------------------------------------------------------------- families


@needs_corpus
def test_every_index_template_is_detected_as_its_family() -> None:  # template_test.go TestNamed
    for line in (FIXTURES / "testdata" / "templates.jsonl").read_text(encoding="utf-8").splitlines():
        for family, hf_template in json.loads(line).items():
            assert ollama.detect_family(hf_template, FIXTURES) == family


@needs_corpus
def test_detection_accepts_edit_distances_below_100_only() -> None:
    hf_template = json.loads((FIXTURES / "testdata" / "templates.jsonl").read_text().splitlines()[4])["openchat"]
    assert ollama.detect_family(hf_template + "~" * 99, FIXTURES) == "openchat"
    assert ollama.detect_family(hf_template + "~" * 100, FIXTURES) is None


@given(st.text(alphabet="ab{%}é", max_size=40), st.text(alphabet="ab{%}é", max_size=40))
def test_levenshtein_matches_the_textbook_recurrence(a: str, b: str) -> None:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    assert ollama.levenshtein(a, b) == previous[-1]


@needs_corpus
def test_family_stop_words_are_the_only_parameters_applied() -> None:
    gemma3 = ollama.load_family("gemma3-instruct", FIXTURES)
    assert gemma3.stop == ("<end_of_turn>",)
    assert ollama.load_family("chatml", FIXTURES).stop == ("<|im_start|>", "<|im_end|>")
    assert "vicuna" in FAMILIES and len(FAMILIES) == 20
    with pytest.raises(InputError, match="unknown Ollama template family"):
        ollama.load_family("nope", FIXTURES)


@needs_corpus
def test_arguments_json_cannot_hold_render_empty_as_in_go():
    """Go's ToolCallFunctionArguments.String() is `bts, _ := json.Marshal(t)`: an infinity (json.loads reads
    `Infinity`) makes Marshal fail, and the text is empty rather than the render an error."""
    calls = [{"function": {"name": "f", "arguments": {"x": float("inf")}}}]
    out = ollama.render(ollama.load_family("command-r", FIXTURES).template, [{"role": "assistant", "content": "", "tool_calls": calls}])
    assert '"parameters": \n' in out


# ------------------------------------------------------------------------------------------- properties

ROLES = st.sampled_from(["system", "user", "assistant", "tool"])
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
ARGUMENTS = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.floats(allow_nan=False), TEXT), max_size=3)
MESSAGE = st.fixed_dictionaries(
    {"role": ROLES, "content": TEXT},
    optional={
        "tool_calls": st.lists(
            st.fixed_dictionaries({"function": st.fixed_dictionaries({"name": TEXT, "arguments": ARGUMENTS})}),
            max_size=2,
        ),
        "thinking": TEXT,
    },
)


@needs_corpus
@pytest.mark.replay  # 60 generated conversations per family: a sample of the families in the fast tier
@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(MESSAGE, max_size=6), with_tools=st.booleans(), system=st.one_of(st.none(), TEXT))
def test_random_conversations_never_crash_a_shipped_family(
    family: str, messages: list, with_tools: bool, system: str | None
) -> None:
    out = ollama.render(
        ollama.load_family(family, FIXTURES).template, messages, tools=[WEATHER_TOOL] if with_tools else None, system=system
    )
    for message in messages:
        if message["role"] == "user":
            assert message["content"] in out
