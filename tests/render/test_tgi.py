"""TGI (minijinja) rendering compared with transformers' rendering of the same real templates."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment
from transformers.utils.chat_template_utils import render_jinja_template

from mldebug_cli.core.errors import InputError
from mldebug_cli.render import chat, tgi, tgi_process
from mldebug_cli.render.chat import RenderLimitError
from mldebug_cli.render.tgi import DEFAULT_TOOL_PROMPT, TGIRenderLimitError, render_tgi
from support import LLAMACPP_TEMPLATES, needs_corpus

pytest.importorskip("minijinja")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TEMPLATES = LLAMACPP_TEMPLATES
HOSTILE = FIXTURES / "hostile" / "templates"
STANDARD = [
    {"role": "system", "content": "You are a helpful assistant"},
    {"role": "user", "content": "Hello"},
    {"role": "assistant", "content": "Hi there"},
    {"role": "user", "content": "How are you?"},
]
# TGI builds a default minijinja Environment: no trim_blocks / lstrip_blocks, unlike transformers.
WHITESPACE_ONLY = {
    "Apriel-1.6-15b-Thinker-fixed.jinja",
    "ByteDance-Seed-OSS.jinja",
    "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
    "GLM-4.6.jinja",
    "GLM-4.7-Flash.jinja",
    "HuggingFaceTB-SmolLM3-3B.jinja",
    "MiniMax-M2.jinja",
    "StepFun3.5-Flash.jinja",
    "stepfun-ai-Step-3.5-Flash.jinja",
}
# `for tool in tools` with tools none: minijinja iterates nothing, Jinja2 raises.
ONLY_TGI_RENDERS = {
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
}
# minijinja: none `is iterable` but has no length; `{%- generation -%}` escapes TGI's literal tag removal.
ONLY_TRANSFORMERS_RENDERS = {
    "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja": "cannot calculate length of value of type none",
    "Qwen3-Coder.jinja": "cannot calculate length of value of type none",
    "LFM2.5-8B-A1B.jinja": "unknown statement generation",
}
BOTH_FAIL = {"fireworks-ai-llama-3-firefunction-v2.jinja", "google-gemma-2-2b-it.jinja"}
REAL_TEMPLATES = sorted(p.name for p in TEMPLATES.glob("*.jinja"))


def transformers_render(source: str) -> str:
    rendered, _ = render_jinja_template(
        [STANDARD], chat_template=source, add_generation_prompt=True, bos_token="<s>", eos_token="</s>"
    )
    return rendered[0]


def jinja2_without_block_trimming(source: str) -> str:
    env = ImmutableSandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda value, indent=None, **_: json.dumps(value, indent=indent, ensure_ascii=False)
    return env.from_string(source).render(
        messages=STANDARD, bos_token="<s>", eos_token="</s>", add_generation_prompt=True, tools=None
    )


def tgi_render(source: str) -> str:
    return render_tgi(source, STANDARD, bos_token="<s>", eos_token="</s>").prompt


@needs_corpus
@pytest.mark.parametrize("name", REAL_TEMPLATES)
def test_tgi_against_transformers(name: str) -> None:
    source = (TEMPLATES / name).read_text()
    if name in BOTH_FAIL:
        with pytest.raises(InputError):
            tgi_render(source)
        with pytest.raises(jinja2.TemplateError):
            transformers_render(source)
    elif name in ONLY_TGI_RENDERS:
        assert "How are you?" in tgi_render(source)
        with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
            transformers_render(source)
    elif name in ONLY_TRANSFORMERS_RENDERS:
        with pytest.raises(InputError, match=ONLY_TRANSFORMERS_RENDERS[name]):
            tgi_render(source)
        assert "How are you?" in transformers_render(source)
    elif name in WHITESPACE_ONLY:
        tgi = tgi_render(source)
        assert tgi != transformers_render(source)
        assert tgi == jinja2_without_block_trimming(source)
    else:
        assert tgi_render(source) == transformers_render(source)


@needs_corpus
def test_tools_are_appended_to_the_last_message_when_the_template_ignores_them() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    source = (TEMPLATES / "google-gemma-2-2b-it.jinja").read_text()
    result = render_tgi(source, STANDARD[1:], bos_token="<bos>", eos_token="<eos>", tools=tools)
    appended = "\n---\n" + json.dumps(tools, separators=(",", ":")) + "\n" + DEFAULT_TOOL_PROMPT
    assert "How are you?" + appended.rstrip() + "<end_of_turn>" in result.prompt  # gemma trims content
    assert result.rules_applied == ("tools_appended_to_last_message",)


@needs_corpus
def test_only_the_tool_prompt_is_appended_when_the_template_uses_tools() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    source = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    result = render_tgi(source, STANDARD, bos_token=None, eos_token=None, tools=tools, tool_prompt="Use tools.")
    assert "How are you?\n---\nUse tools.<|im_end|>" in result.prompt
    assert '"name": "get_weather"' in result.prompt


@needs_corpus
def test_final_assistant_message_is_continued() -> None:
    source = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    messages = STANDARD[:3] + [{"role": "assistant", "content": "Hi there, I am"}]
    result = render_tgi(source, messages, bos_token=None, eos_token=None)
    assert result.prompt.endswith("<|im_start|>assistant\nHi there, I am")
    assert result.rules_applied == ("final_assistant_continued",)


def test_content_parts_are_flattened_and_extra_keys_dropped() -> None:
    source = "{% for m in messages %}{{ m.role }}:{{ m.content }}|{{ m.name }}{% endfor %}"
    messages = [
        {
            "role": "user",
            "name": "bob",
            "content": [
                {"type": "text", "text": "look "},
                {"type": "image_url", "image_url": {"url": "http://x/a.png"}},
                {"type": "text", "text": " here"},
            ],
        }
    ]
    result = render_tgi(source, messages, bos_token=None, eos_token=None)
    assert result.prompt == "user:look ![](http://x/a.png) here|"
    assert result.rules_applied == ("extra_message_keys_dropped", "content_parts_flattened")


def test_template_rewrites_tgi_applies() -> None:
    source = (
        "{{ messages[0]['content'][0]['text'] }}|{% for m in messages[::-1] %}{{ m.role }}{% endfor %}"
        "{% generation %}x{% endgeneration %}"
    )
    result = render_tgi(source, STANDARD[:2], bos_token=None, eos_token=None)
    assert result.prompt == "You are a helpful assistant|usersystemx"
    assert result.rules_applied == ("gemma3_content_rewrite", "reverse_slice_rewrite", "generation_tags_removed")


def test_builtins_and_minijinja_tojson() -> None:
    source = "{{ strftime_now('%d %b %Y') }}|{{ tools | tojson }}|{{ '  a  '.strip() }}"
    tools = [{"name": "<b>&'"}]
    result = render_tgi(source, STANDARD, bos_token=None, eos_token=None, tools=tools, now=datetime(2025, 1, 2))
    assert result.prompt.startswith('02 Jan 2025|[{"name": "\\u003cb\\u003e\\u0026\\u0027"}]|a')
    with pytest.raises(InputError, match="the template raised an error: no system"):
        render_tgi("{{ raise_exception('no system') }}", STANDARD, bos_token=None, eos_token=None)


def test_runaway_loops_run_out_of_fuel() -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(TGIRenderLimitError, match="ran more than minijinja's budget of 50,000,000 instructions"):
        render_tgi(loop, STANDARD, bos_token=None, eos_token=None)


def test_parse_errors_are_input_errors() -> None:
    with pytest.raises(InputError, match="minijinja failed to render"):
        render_tgi("{% for m in messages %}", STANDARD, bos_token=None, eos_token=None)


def test_missing_minijinja_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "minijinja", None)
    with pytest.raises(InputError) as caught:
        render_tgi("{{ messages }}", STANDARD, bos_token=None, eos_token=None)
    assert caught.value.hint == "pip install 'mldebug[tgi]'"


@needs_corpus
def test_a_real_template_renders_the_same_text_in_one_reused_child_process() -> None:
    source = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text()
    expected = (
        "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n"
        "<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nHow are you?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tgi_render(source) == expected
    child = tgi_process._current.process.pid
    assert tgi_render(source) == expected
    assert tgi_process._current.process.pid == child != os.getpid()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the render memory limit is enforced on Linux")
def test_a_template_over_the_memory_limit_is_a_render_limit_error_and_rendering_goes_on() -> None:
    """minijinja aborts the process when an allocation fails: the child, not mldebug."""
    with pytest.raises(TGIRenderLimitError) as caught:
        render_tgi((HOSTILE / "doubling_string.jinja").read_text(), STANDARD, bos_token=None, eos_token=None,
                   template_name="doubling.jinja")  # fmt: skip
    assert str(caught.value) == "doubling.jinja: the template used more than the 1024 MiB render memory limit"
    assert isinstance(caught.value, RenderLimitError) and isinstance(caught.value, InputError)
    assert tgi_render("{{ messages[1].content }}") == "Hello"


def test_a_render_over_the_time_limit_is_a_render_limit_error_and_its_child_is_killed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # long enough for a trivial render on a busy machine (the renders before and after the loop share the limit)
    monkeypatch.setattr(chat, "DEFAULT_LIMITS", chat.RenderLimits(seconds=2.0))
    monkeypatch.setattr(tgi, "FUEL", 10**15)  # the clock, not minijinja's instruction budget, must stop this loop
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    tgi_render("")
    child = tgi_process._current.process
    with pytest.raises(TGIRenderLimitError, match=r"^chat template: the template exceeded the 2 s render limit$"):
        tgi_render(loop)
    assert child.returncode == -signal.SIGKILL
    assert tgi_render("{{ messages[1].content }}") == "Hello"


def test_a_child_that_dies_mid_render_is_a_one_line_error() -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    tgi_render("")
    killer = threading.Timer(0.2, os.kill, (tgi_process._current.process.pid, signal.SIGKILL))
    killer.start()
    with pytest.raises(InputError, match=r"^chat template: the TGI render process died \(signal SIGKILL\)$"):
        tgi_render(loop)
    killer.join()
    assert tgi_render("{{ messages[1].content }}") == "Hello"


def test_the_render_process_imports_only_minijinja_besides_the_standard_library() -> None:
    """Nothing heavy, and nothing that holds threads (a Rust tokenizer), is loaded in the child."""
    listing = tgi_process._CHILD_MAIN.replace("serve()", "import minijinja; print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run(
        [sys.executable, "-c", listing, json.dumps(sys.path)], capture_output=True, text=True, check=True
    )
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert "minijinja" in loaded and not loaded & {"transformers", "tokenizers", "torch", "jinja2", "typer", "datasets"}
    assert {n for n in json.loads(done.stdout) if n.startswith("mldebug_cli")} == {
        "mldebug_cli",
        "mldebug_cli.core",
        "mldebug_cli.core.errors",  # an exception's words on one line (no import of its own)
        "mldebug_cli.render",
        "mldebug_cli.render.chat",
        "mldebug_cli.render.tgi_process",
        "mldebug_cli.sources",
        "mldebug_cli.sources.template_bounds",  # the parse limits (standard library only at import)
    }


def test_a_render_process_that_cannot_start_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    tgi_render("")
    tgi_process._current.stop()
    monkeypatch.setattr(tgi_process, "_CHILD_MAIN", "import sys; sys.exit('no minijinja here')")
    with pytest.raises(
        InputError, match=r"^chat template: the TGI render process died \(exit status 1: no minijinja here\)$"
    ):
        tgi_render("")
    monkeypatch.undo()
    assert tgi_render("{{ messages[1].content }}") == "Hello"
