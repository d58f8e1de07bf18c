"""The bounded renderer renders exactly what transformers renders, and enforces its limits without side effects."""

from __future__ import annotations

import json
import resource
import signal
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from transformers.utils import chat_template_utils

from mldebug_cli.render import chat
from mldebug_cli.render.chat import ChatRenderer, RenderLimitError, RenderLimits, TemplateRenderError
from support import CORPUS, LLAMACPP_TEMPLATES, TOKENIZERS, TRL_TEMPLATES, needs_corpus

LOOP = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
CONTEXTS = sorted((CORPUS / "templates" / "minja" / "tests" / "contexts").glob("*.json"))


def fixture_templates() -> list[tuple[str, str]]:
    """(name, source) of every real template in fixtures/: llama.cpp's 63, TRL's 3 and the 4 tokenizers'."""
    files = sorted((LLAMACPP_TEMPLATES).rglob("*.jinja")) + sorted(TRL_TEMPLATES.glob("*.jinja"))
    named = [(str(f.relative_to(CORPUS)), f.read_text(encoding="utf-8")) for f in files]
    for folder in sorted(TOKENIZERS.iterdir()):
        template = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8")).get("chat_template")
        if template:
            named.append((folder.name, template))
    return named


@pytest.fixture(autouse=True)
def fresh_timeout_count(monkeypatch):
    monkeypatch.setattr(chat, "_timeouts", Counter())


@needs_corpus
@pytest.mark.replay
@pytest.mark.parametrize(("name", "source"), fixture_templates(), ids=[n for n, _ in fixture_templates()])
def test_renders_exactly_what_transformers_renders(name, source):
    """Same text, same generation spans, or the same error, for every context and generation-prompt setting."""
    for context_file in CONTEXTS:
        context = json.loads(context_file.read_text(encoding="utf-8"))
        special = {"bos_token": context.get("bos_token", "<s>"), "eos_token": context.get("eos_token", "</s>")}
        renderer = ChatRenderer(source, special)
        for add_generation_prompt in (False, True):
            expected = _transformers(source, context, special, add_generation_prompt, renderer.has_generation_markers)
            try:
                rendered = renderer.render(context["messages"], context.get("tools"), add_generation_prompt, True)
                got = (rendered.text, rendered.generation_spans)
            except TemplateRenderError as exc:
                got = str(exc)
            assert got == expected, (name, context_file.name, add_generation_prompt)


def _transformers(source, context, special, add_generation_prompt, spans):
    messages = [{k: v for k, v in m.items() if v is not None} for m in context["messages"]]
    try:
        texts, all_spans = chat_template_utils.render_jinja_template(
            conversations=[messages], tools=context.get("tools"), chat_template=source,
            add_generation_prompt=add_generation_prompt, return_assistant_tokens_mask=spans, **special,
        )
    except Exception as exc:  # the reference error, described as the renderer describes it
        return chat._describe(exc)
    return texts[0], tuple(tuple(s) for s in all_spans[0]) if spans else ()


def test_the_template_is_compiled_by_transformers_as_a_bounded_sandbox_and_transformers_is_left_as_it_was():
    source = "{{ messages[0].content | tojson }}{{ raise_exception is defined }}"
    assert ChatRenderer(source, {}).render([{"role": "user", "content": "hi"}]).text == '"hi"True'
    environment = chat.compile_bounded(source).environment
    assert type(environment).__name__ == "BoundedSandbox"
    assert environment.filters["tojson"].__module__ == chat_template_utils.__name__
    assert chat_template_utils.ImmutableSandboxedEnvironment.__module__ == "jinja2.sandbox"
    assert chat_template_utils._compile_jinja_template.__module__ == chat_template_utils.__name__


def test_output_over_the_limit_is_a_limit_error():
    renderer = ChatRenderer("{% for i in range(2000) %}x{% endfor %}", {}, limits=RenderLimits(output_chars=1000))
    with pytest.raises(RenderLimitError, match=r"^the template produced 2,000 characters, more than the 0 MiB render limit$"):
        renderer.render([{"role": "user", "content": "hi"}])


def test_after_two_timeouts_a_template_is_no_longer_rendered_and_others_still_are():
    looping = ChatRenderer(LOOP, {}, limits=RenderLimits(seconds=0.2))
    for _ in range(2):
        with pytest.raises(RenderLimitError, match=r"^the template exceeded the 0.2 s render limit$"):
            looping.render([{"role": "user", "content": "hi"}])
    with pytest.raises(RenderLimitError, match=r"^not rendered: the template exceeded the 0.2 s render limit 2 times already$"):
        ChatRenderer(LOOP, {}, limits=RenderLimits(seconds=0.2)).render([{"role": "user", "content": "hi"}])
    assert ChatRenderer("{{ messages[0].content }}", {}).render([{"role": "user", "content": "hi"}]).text == "hi"


def test_a_running_alarm_and_its_handler_are_given_back():
    fired = []

    def handler(*_):
        fired.append(True)

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 60)
    try:
        with pytest.raises(RenderLimitError):
            ChatRenderer(LOOP, {}, limits=RenderLimits(seconds=0.2)).render([{"role": "user", "content": "hi"}])
        ChatRenderer("{{ 1 }}", {}).render([])
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 60 and fired == []
        assert signal.getsignal(signal.SIGALRM) is handler
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_off_the_main_thread_rendering_works_without_touching_signals():
    results = []
    thread = threading.Thread(target=lambda: results.append(ChatRenderer("{{ 6 * 7 }}", {}).render([]).text))
    thread.start()
    thread.join(timeout=60)
    assert results == ["42"] and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA is read from /proc on Linux")
def test_the_memory_limit_is_lifted_after_the_render_even_when_it_was_hit():
    before = resource.getrlimit(resource.RLIMIT_DATA)
    # str.ljust builds its result in one call, under no static width cap (center and indent are refused before)
    renderer = ChatRenderer("{{ 'a'.ljust(2 * 10 ** 9) }}", {}, limits=RenderLimits(memory_bytes=64 * 2**20))
    with pytest.raises(RenderLimitError, match=r"^the template used more than the 64 MiB render memory limit$"):
        renderer.render([])
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    assert len("b" * 2 * 10**8) == 2 * 10**8  # and the process can allocate again


def test_importing_the_renderer_imports_neither_jinja2_nor_transformers():
    import subprocess

    code = "import sys, mldebug_cli.render.chat; print([m for m in ('jinja2', 'transformers') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[2])
    assert done.stdout.strip() == "[]"
