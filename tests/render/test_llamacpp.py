"""llama.cpp rendering checked against llama.cpp's own test expectations and real model templates."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.render import llamacpp
from mldebug_cli.render.llamacpp import CHATML_TEMPLATE, probe_caps, render_llamacpp
from mldebug_cli.sources.gguf_file import read_gguf_vocab
from support import CORPUS, CORPUS_GGUF, HAVE_CORPUS, LLAMACPP_TEMPLATES, needs_corpus

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TEMPLATES = LLAMACPP_TEMPLATES
CASES = json.loads((CORPUS / "templates" / "llamacpp_test_chat_template_2025-02-20.json").read_text())["cases"] if HAVE_CORPUS else []
CONTEXTS = {p.stem: json.loads(p.read_text()) for p in (CORPUS / "templates" / "minja" / "tests" / "contexts").glob("*.json")}
NOW = datetime(2025, 1, 1)
STANDARD = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there"},
    {"role": "user", "content": "How are you?"},
]
# minja (llama.cpp 2025) also stripped spaces before {{ at a line start; llama.cpp's own Jinja engine no longer
# does, and its later test file expects the spaces kept, as its legacy formatter always did.
MINJA_LSTRIP_QUIRK = "ChatGLM3"
# llama.cpp's test marks it unsupported with Jinja: the template reads additional_special_tokens.
UNSUPPORTED_WITH_JINJA = "ai-sage/GigaChat-20B-A3B-instruct"
# Needs a `functions` variable that llama.cpp's former firefunction-v2 handler supplied.
NEEDS_FUNCTIONS_VARIABLE = {
    "fireworks-ai-llama-3-firefunction-v2.jinja",
    "older_c392e50/fireworks-ai-llama-3-firefunction-v2.jinja",
}
REAL_TEMPLATES = sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.jinja"))


def render_case(case: dict, **overrides: object) -> llamacpp.RenderResult:
    options = {
        "bos_token": case["bos_token"],
        "eos_token": case["eos_token"],
        "add_bos": True,
        "add_eos": True,
        "add_generation_prompt": case["add_generation_prompt"],
        "now": NOW,
    }
    options.update(overrides)
    return render_llamacpp(case["template"], case["messages"], **options)


@needs_corpus
@pytest.mark.parametrize("case", CASES, ids=[c["name"][:40] for c in CASES])
def test_llama_cpp_test_cases(case: dict) -> None:
    if case["name"] == UNSUPPORTED_WITH_JINJA:
        with pytest.raises(InputError, match="additional_special_tokens"):
            render_case(case)
        return
    expected = case["expected_output_legacy"] if case["name"] == MINJA_LSTRIP_QUIRK else case["expected_output"]
    assert render_case(case).prompt == expected


@needs_corpus
def test_minja_lstrip_quirk_is_the_only_difference() -> None:
    case = next(c for c in CASES if c["name"] == MINJA_LSTRIP_QUIRK)
    assert render_case(case).prompt.replace("|>\n ", "|>\n") == case["expected_output"]


@needs_corpus
def test_rules_name_what_changed_the_output() -> None:
    by_name = {c["name"]: c for c in CASES}
    mistral = render_case(by_name["mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)"])
    assert mistral.rules_applied == ("system_merged_into_next_message", "bos_stripped")
    assert not mistral.caps.supports_system_role
    assert render_case(by_name["teknium/OpenHermes-2.5-Mistral-7B"]).rules_applied == ()
    orion = render_case(by_name["OrionStarAI/Orion-14B-Chat"])
    assert orion.rules_applied == ("system_merged_into_next_message", "eos_stripped")


@needs_corpus
def test_no_strip_when_the_vocab_does_not_add_bos() -> None:
    case = next(c for c in CASES if c["name"] == "mlabonne/AlphaMonarch-7B")
    result = render_case(case, add_bos=False)
    assert result.prompt == "<s>" + case["expected_output"]
    assert "bos_stripped" not in result.rules_applied


@needs_corpus
@pytest.mark.parametrize("name", REAL_TEMPLATES)
def test_real_templates_render_a_standard_conversation(name: str) -> None:
    source = (TEMPLATES / name).read_text()

    def render(**extra: object) -> llamacpp.RenderResult:
        return render_llamacpp(
            source, STANDARD, bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False, now=NOW, **extra
        )

    if name in NEEDS_FUNCTIONS_VARIABLE:
        with pytest.raises(InputError, match="'functions' is undefined"):
            render()
        result = render(extra_vars={"functions": "[]"})
    else:
        result = render()
    assert "How are you?" in result.prompt
    assert not result.prompt.startswith("<s>")


@needs_corpus
@pytest.mark.parametrize("name", ["Qwen3-Coder.jinja", "GLM-4.6.jinja", "MiniMax-M2.jinja", "LFM2.5-8B-A1B.jinja"])
def test_string_tool_arguments_are_parsed_for_templates_that_need_objects(name: str) -> None:
    context = CONTEXTS["tool_use"]
    result = render_llamacpp(
        (TEMPLATES / name).read_text(),
        context["messages"],
        bos_token="",
        eos_token="",
        add_bos=False,
        add_eos=False,
        tools=context["tools"],
        now=NOW,
    )
    assert result.caps.requires_object_arguments
    assert "tool_arguments_parsed" in result.rules_applied
    assert "print('Hello, World!')" in result.prompt


def test_object_tool_arguments_become_strings_for_other_templates() -> None:
    source = (
        "{% for m in messages %}{{ m.content }}|{% for c in m.tool_calls or [] %}{{ c.function.arguments }}"
        "{% endfor %}{% endfor %}"
    )
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": [call]}]
    result = render_llamacpp(source, messages, bos_token="", eos_token="", add_bos=False, add_eos=False)
    assert result.prompt == 'hi||{"x":1}'  # compact, as nlohmann::json::dump writes it; null content is ""
    assert result.rules_applied == ("null_content_as_empty_string", "tool_arguments_as_string")
    assert call["function"]["arguments"] == {"x": 1}  # the caller's messages are not modified


@needs_corpus
def test_templates_that_always_tojson_arguments_need_objects() -> None:
    assert probe_caps((TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()).requires_object_arguments


def test_chatml_fallback_when_the_model_has_no_template() -> None:
    result = render_llamacpp(None, STANDARD[:2], bos_token="<s>", eos_token="</s>", add_bos=True, add_eos=False)
    assert result.prompt == (
        "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert result.rules_applied[0] == "chatml_fallback"


def test_parse_error_fails_now_and_fell_back_to_chatml_before() -> None:
    broken = "{% for message in messages %}{{ message.content }"
    with pytest.raises(InputError, match="does not parse") as caught:
        render_llamacpp(broken, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False)
    assert caught.value.hint
    old = render_llamacpp(
        broken, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False, chatml_on_parse_error=True
    )
    assert old.rules_applied[0] == "chatml_fallback_parse_error"
    assert (
        old.prompt
        == render_llamacpp(CHATML_TEMPLATE, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False).prompt
    )


@needs_corpus
def test_date_string_is_injected_like_llama_cpp() -> None:
    source = (TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text()
    result = render_llamacpp(
        source, STANDARD, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>", add_bos=True, add_eos=False, now=NOW
    )
    assert "Today Date: 01 Jan 2025" in result.prompt  # transformers would render the default "26 Jul 2024"
    assert "date_context" in result.rules_applied


@needs_corpus
def test_enable_thinking_defaults_to_true() -> None:
    source = (TEMPLATES / "deepseek-ai-DeepSeek-V3.1.jinja").read_text()
    default = render_llamacpp(source, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False)
    explicit = render_llamacpp(
        source, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False, enable_thinking=True
    )
    disabled = render_llamacpp(
        source, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False, enable_thinking=False
    )
    assert "enable_thinking_default" in default.rules_applied
    assert default.prompt == explicit.prompt != disabled.prompt
    assert "enable_thinking_default" not in explicit.rules_applied


def test_developer_role_becomes_system() -> None:
    messages = [{"role": "developer", "content": "Be brief"}, {"role": "user", "content": "Hi"}]
    result = render_llamacpp(CHATML_TEMPLATE, messages, bos_token="", eos_token="", add_bos=False, add_eos=False)
    assert result.prompt.startswith("<|im_start|>system\nBe brief")
    assert "developer_role_as_system" in result.rules_applied


def test_typed_content_template_gets_parts() -> None:
    source = "{% for m in messages %}{% for part in m.content %}[{{ part.text }}]{% endfor %}{% endfor %}"
    assert probe_caps(source).requires_typed_content
    result = render_llamacpp(source, STANDARD[1:2], bos_token="", eos_token="", add_bos=False, add_eos=False)
    assert result.prompt == "[Hello]"
    assert "typed_content" in result.rules_applied


def test_content_parts_are_joined_for_string_templates() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    result = render_llamacpp(
        CHATML_TEMPLATE, messages, bos_token="", eos_token="", add_bos=False, add_eos=False, add_generation_prompt=False
    )
    assert result.prompt == "<|im_start|>user\na\nb<|im_end|>\n"
    assert "content_parts_joined" in result.rules_applied


@needs_corpus
def test_gguf_template_with_its_vocab() -> None:
    vocab = read_gguf_vocab(CORPUS_GGUF / "ggml-vocab-phi-3.gguf")
    result = render_llamacpp(
        vocab.chat_template,
        STANDARD,
        bos_token=vocab.bos_text,
        eos_token=vocab.eos_text,
        add_bos=vocab.add_bos,
        add_eos=vocab.add_eos,
    )
    assert result.prompt.startswith("<|user|>\nYou are a helpful assistant\nHello<|end|>")
    assert result.rules_applied == ("system_merged_into_next_message", "bos_stripped")


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{{ raise_exception('Only user and assistant roles') }}", "the template raised an error: Only user"),
        ("{{ 'a' * 100000000 }}", "sandbox forbids"),
        ("{{ 2 ** 100000000 }}", "sandbox forbids"),
        (
            "{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
            "sandbox forbids",
        ),
        ("{% for i in range(100000) %}{{ 'x' * 100 }}{% endfor %}", "rendering exceeds"),
        ("{{ messages[0].content.__class__.__mro__ }}", "sandbox forbids"),
        ("{{ messages.append(1) }}", "sandbox forbids"),
    ],
)
def test_hostile_templates_fail_cleanly(template: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        render_llamacpp(template, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False)


def test_runaway_loop_hits_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp, "RENDER_TIMEOUT_SECONDS", 0.5)
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(InputError, match="my.gguf: rendering took longer than 0.5s"):
        render_llamacpp(
            loop, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False, template_name="my.gguf"
        )


def test_tojson_uses_python_separators_and_raw_utf8() -> None:
    source = "{{ tools | tojson }}|{{ tools | map(attribute='name') | tojson }}"
    result = render_llamacpp(
        source, STANDARD, bos_token="", eos_token="", add_bos=False, add_eos=False, tools=[{"name": "café", "x": "<b>"}]
    )
    assert result.prompt == '[{"name": "café", "x": "<b>"}]|["café"]'
