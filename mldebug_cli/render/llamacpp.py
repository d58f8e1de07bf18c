"""Render a conversation the way llama.cpp's server does (``common_chat_templates_apply``, Jinja path).

llama.cpp does not hand the messages to the template as given: it normalises them (OpenAI-style
parsing), probes the template's capabilities, rewrites the conversation to fit them (system role,
typed content, developer role), adds context variables (``enable_thinking``, ``date_string``) and
strips a BOS/EOS text the tokenizer will add again. Each of those rules is named in
``RenderResult.rules_applied`` when it changed the output, so a caller can say which rule caused a
difference from the training-side rendering.

Semantics follow ggml-org/llama.cpp ``common/chat.cpp`` (``common_chat_templates_init``,
``common_chat_templates_apply_jinja``, ``common_chat_template_direct_apply``, ``namespace workaround``),
``common/jinja/caps.cpp`` (capability probes), ``common/jinja/lexer.cpp`` (whitespace options) and
``common/jinja/value.cpp`` (``tojson``, ``strftime_now``, ``raise_exception``).
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.render.chat import bound_width_filters, concat_checking_code_generator, memory_cap
from mldebug_cli.sources.template_bounds import bounded_parse

MAX_OUTPUT_CHARS = 8_000_000
RENDER_MEMORY_BYTES = 1024 * 2**20  # growth of the process during one render (Linux, main thread)
RENDER_TIMEOUT_SECONDS = 10.0
_MAX_EXPONENT = 4096

# Same output as llama.cpp's CHATML_TEMPLATE_SRC, used when the model carries no template.
CHATML_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

RULE_DESCRIPTIONS: Mapping[str, str] = {
    "chatml_fallback": "the model has no chat template, so llama.cpp uses ChatML",
    "chatml_fallback_parse_error": "the template does not parse; llama.cpp before its own Jinja engine used ChatML",
    "null_content_as_empty_string": "llama.cpp passes a missing or null content as an empty string",
    "content_parts_joined": "text content parts are joined with newlines into one string",
    "tool_arguments_as_string": "tool-call arguments are passed to the template as a JSON string",
    "tool_arguments_parsed": "the template only renders tool-call arguments given as objects, so llama.cpp "
    "parses JSON-string arguments",
    "extra_message_keys_dropped": "llama.cpp keeps only role, content, reasoning_content, name, "
    "tool_call_id and tool_calls of each message",
    "typed_content": "the template reads content as a list of parts, so strings become [{type: text}]",
    "developer_role_as_system": "the 'developer' role is renamed 'system' (except for gpt-oss templates)",
    "system_merged_into_next_message": "the template does not render a system message, so llama.cpp "
    "prepends it to the next message, joined by a newline",
    "system_dropped": "the template does not render a system message and nothing follows it, so it is removed",
    "enable_thinking_default": "llama.cpp passes enable_thinking=true unless the request says otherwise",
    "date_context": "llama.cpp defines date_string and datetime with today's date",
    "bos_stripped": "the rendered text starts with the BOS text and the tokenizer adds BOS itself, "
    "so llama.cpp removes it",
    "eos_stripped": "the rendered text ends with the EOS text and the tokenizer adds EOS itself, "
    "so llama.cpp removes it",
}

_KEPT_MESSAGE_KEYS = ("role", "content", "reasoning_content", "name", "tool_call_id", "tool_calls")
_OPTIONAL_KEYS = ("reasoning_content", "name", "tool_call_id", "tool_calls")


@dataclass(frozen=True)
class TemplateCaps:
    """What llama.cpp's capability probes conclude about a template."""

    supports_system_role: bool
    requires_typed_content: bool
    requires_object_arguments: bool


@dataclass(frozen=True)
class RenderResult:
    prompt: str
    rules_applied: tuple[str, ...]
    caps: TemplateCaps


@dataclass(frozen=True)
class _Options:
    bos_token: str
    eos_token: str
    add_generation_prompt: bool
    tools: tuple[Any, ...]
    enable_thinking: bool | None
    extra_vars: Mapping[str, Any]
    now: datetime
    uses_channel_format: bool


def render_llamacpp(
    template: str | None,
    messages: Sequence[Mapping[str, Any]],
    *,
    bos_token: str,
    eos_token: str,
    add_bos: bool,
    add_eos: bool,
    add_generation_prompt: bool = True,
    tools: Sequence[Any] | None = None,
    enable_thinking: bool | None = None,
    extra_vars: Mapping[str, Any] | None = None,
    now: datetime | None = None,
    chatml_on_parse_error: bool = False,
    template_name: str = "chat template",
) -> RenderResult:
    """Render ``messages`` as llama.cpp's server would, naming each llama.cpp rule that changed the output.

    ``bos_token``/``eos_token`` are the vocab's texts, ``add_bos``/``add_eos`` the vocab's flags.
    ``enable_thinking=None`` means the request did not set it (llama.cpp then passes true).
    ``chatml_on_parse_error`` reproduces llama.cpp before 2026, which fell back to ChatML on a parse
    error; current llama.cpp refuses to load such a template, which here is an ``InputError``.
    """
    source, fallback_rule = _choose_source(template, chatml_on_parse_error, template_name)
    compiled = _compile(source, template_name)
    try:
        caps = probe_caps(source)
    except _TooSlow:
        raise _TooSlow(f"{template_name}: rendering took longer than {RENDER_TIMEOUT_SECONDS:g}s") from None
    options = _Options(
        bos_token=bos_token,
        eos_token=eos_token,
        add_generation_prompt=add_generation_prompt,
        tools=tuple(tools or ()),
        enable_thinking=enable_thinking,
        extra_vars=dict(extra_vars or {}),
        now=now or datetime.now(),
        uses_channel_format="<|channel|>" in source,
    )
    rendered, triggered = _render_with_rules(compiled, caps, messages, options, frozenset(), template_name)
    applied = [fallback_rule] if fallback_rule else []
    applied += [rule for rule in triggered if _rule_changes_output(compiled, caps, messages, options, rule, rendered)]
    prompt, stripped = _strip_bos_eos(rendered, bos_token, eos_token, add_bos, add_eos)
    return RenderResult(prompt=prompt, rules_applied=tuple(applied + stripped), caps=caps)


def _choose_source(template: str | None, chatml_on_parse_error: bool, name: str) -> tuple[str, str | None]:
    if not template or template == "chatml":
        return CHATML_TEMPLATE, "chatml_fallback"
    if chatml_on_parse_error:
        try:
            _compile(template, name)
        except InputError:
            return CHATML_TEMPLATE, "chatml_fallback_parse_error"
    return template, None


def _strip_bos_eos(text: str, bos: str, eos: str, add_bos: bool, add_eos: bool) -> tuple[str, list[str]]:
    stripped = []
    if add_bos and bos and text.startswith(bos):
        text = text[len(bos) :]
        stripped.append("bos_stripped")
    if add_eos and eos and text.endswith(eos):
        text = text[: len(text) - len(eos)]
        stripped.append("eos_stripped")
    return text, stripped


def _rule_changes_output(
    compiled: jinja2.Template,
    caps: TemplateCaps,
    messages: Sequence[Mapping[str, Any]],
    options: _Options,
    rule: str,
    rendered: str,
) -> bool:
    """Leave-one-out: render again without ``rule``; a failure without it also counts as a change."""
    try:
        without, _ = _render_with_rules(compiled, caps, messages, options, frozenset({rule}), "")
    except InputError:
        return True
    return without != rendered


def _render_with_rules(
    compiled: jinja2.Template,
    caps: TemplateCaps,
    messages: Sequence[Mapping[str, Any]],
    options: _Options,
    skipped: frozenset[str],
    name: str,
) -> tuple[str, list[str]]:
    triggered: list[str] = []

    def apply(rule: str, step: Callable[[], bool]) -> None:
        if rule not in skipped and step():
            triggered.append(rule)

    prepared = [dict(m) for m in messages]
    apply("extra_message_keys_dropped", lambda: _drop_extra_keys(prepared))
    apply("null_content_as_empty_string", lambda: _null_content_as_empty(prepared))
    if caps.requires_object_arguments:
        apply("tool_arguments_parsed", lambda: _parse_arguments(prepared, name))
    else:
        apply("tool_arguments_as_string", lambda: _arguments_as_string(prepared))
    if caps.requires_typed_content:
        apply("typed_content", lambda: _wrap_typed_content(prepared))
    else:
        apply("content_parts_joined", lambda: _join_content_parts(prepared, name))
    if not options.uses_channel_format:
        apply("developer_role_as_system", lambda: _developer_as_system(prepared))
    if not caps.supports_system_role:
        apply("system_merged_into_next_message", lambda: _merge_system(prepared, name))
        apply("system_dropped", lambda: _drop_lone_system(prepared))
    context = _context(prepared, options, skipped, triggered)
    return _render(compiled, context, name, options.now), triggered


def _context(messages: list[dict[str, Any]], options: _Options, skipped: frozenset[str], triggered: list[str]) -> dict:
    enable_thinking = options.enable_thinking
    if enable_thinking is None and "enable_thinking_default" not in skipped:
        enable_thinking = True
        triggered.append("enable_thinking_default")
    context: dict[str, Any] = {"messages": messages, "bos_token": options.bos_token, "eos_token": options.eos_token}
    if enable_thinking is not None:
        context["enable_thinking"] = enable_thinking
    if options.tools:
        context["tools"] = list(options.tools)
    if "date_context" not in skipped:
        context["datetime"] = options.now.strftime("%b %d %Y")
        context["date_string"] = options.now.strftime("%d %b %Y")
        triggered.append("date_context")
    context.update(options.extra_vars)
    if options.add_generation_prompt:
        context["add_generation_prompt"] = True  # llama.cpp leaves it undefined when false
    return context


# --- message normalisation (common_chat_msgs_parse_oaicompat + common_chat_msg::to_json_oaicompat) ---


def _drop_extra_keys(messages: list[dict[str, Any]]) -> bool:
    """Keep llama.cpp's message fields; the optional ones only when non-empty, as to_json_oaicompat does."""
    changed = False
    for message in messages:
        extra = [k for k in message if k not in _KEPT_MESSAGE_KEYS or (k in _OPTIONAL_KEYS and not message[k])]
        for key in extra:
            del message[key]
        changed |= bool(extra)
    return changed


def _null_content_as_empty(messages: list[dict[str, Any]]) -> bool:
    changed = False
    for message in messages:
        if message.get("content") is None:
            message["content"] = ""
            changed = True
    return changed


def _functions(messages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Each tool call's ``function`` as a fresh dict the caller's data does not share."""
    for message in messages:
        calls = message.get("tool_calls")
        if not isinstance(calls, list):
            continue
        message["tool_calls"] = calls = [dict(c) if isinstance(c, Mapping) else c for c in calls]
        for call in calls:
            if isinstance(call, dict) and isinstance(call.get("function"), Mapping):
                call["function"] = dict(call["function"])
                yield call["function"]


def _arguments_as_string(messages: list[dict[str, Any]]) -> bool:
    changed = False
    for function in _functions(messages):
        if "arguments" in function and not isinstance(function["arguments"], str):
            function["arguments"] = json.dumps(function["arguments"], ensure_ascii=False, separators=(",", ":"))
            changed = True
    return changed


def _parse_arguments(messages: list[dict[str, Any]], name: str) -> bool:
    changed = False
    for function in _functions(messages):
        if isinstance(function.get("arguments"), str):
            try:
                function["arguments"] = json.loads(function["arguments"])
            except json.JSONDecodeError as exc:
                raise InputError(f"{name}: llama.cpp fails on tool-call arguments that are not JSON ({exc})") from None
            except (ValueError, RecursionError):  # a number over Python's digit limit, nesting past its recursion limit
                raise InputError(f"{name}: tool-call arguments mldebug cannot read as JSON (a number too long or "
                                 "nesting too deep)") from None
            changed = True
    return changed


def _text_parts(content: list[Any], name: str) -> list[str]:
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") != "text":
            kind = part.get("type") if isinstance(part, Mapping) else type(part).__name__
            raise InputError(f"{name}: llama.cpp accepts only text content parts, got {kind!r}")
        texts.append(str(part.get("text", "")))
    return texts


def _join_content_parts(messages: list[dict[str, Any]], name: str) -> bool:
    changed = False
    for message in messages:
        if isinstance(message.get("content"), list):
            message["content"] = "\n".join(_text_parts(message["content"], name))
            changed = True
    return changed


def _wrap_typed_content(messages: list[dict[str, Any]]) -> bool:
    changed = False
    for message in messages:
        if isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
            changed = True
    return changed


def _developer_as_system(messages: list[dict[str, Any]]) -> bool:
    changed = False
    for message in messages:
        if message.get("role") == "developer":
            message["role"] = "system"
            changed = True
    return changed


def _merge_system(messages: list[dict[str, Any]], name: str) -> bool:
    if len(messages) < 2 or messages[0].get("role") != "system":
        return False
    system, following = messages[0], messages[1]
    if not isinstance(system.get("content"), str) or not isinstance(following.get("content"), str):
        raise InputError(f"{name}: llama.cpp cannot merge a system message into typed content (it fails to render)")
    following["content"] = system["content"] + "\n" + following["content"]
    del messages[0]
    return True


def _drop_lone_system(messages: list[dict[str, Any]]) -> bool:
    if len(messages) == 1 and messages[0].get("role") == "system":
        del messages[0]
        return True
    return False


# --- capability probes (common/jinja/caps.cpp: a probe "uses" a value when the template reads it) ---


class _ReadTracker(dict):
    """A message that records which of its keys the template read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.read_keys: set[str] = set()

    def __getitem__(self, key: Any) -> Any:
        self.read_keys.add(key)
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self.read_keys.add(key)
        return super().get(key, default)


class _ListAccessTracker(str):
    """String content that records being indexed or iterated like a list of parts."""

    list_accessed = False

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, slice):
            type(self).list_accessed = True
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        type(self).list_accessed = True
        return super().__iter__()


def _probe(source: str, messages: list[Any], tools: Any) -> str:
    """Render a probe conversation the way caps_try_execute does; a failure renders as ""."""
    context = {"messages": messages, "tools": tools, "bos_token": "", "eos_token": "", "add_generation_prompt": True}
    try:
        return _render(_compile(source, "probe"), context, "probe", datetime.now())
    except _TooSlow:
        raise
    except InputError:
        return ""


_ARGUMENT_NEEDLE = {"argument_needle": "print('Hello, World!')"}
# A double-encoded string argument shows its key escaped, as \"argument_needle\".
_ESCAPED_NEEDLE = '\\"argument_needle\\"'


def _renders_arguments(source: str, arguments: Any) -> bool:
    """Whether a tool call's argument key shows in the probe's output, and not double-encoded."""
    call = {"id": "call_1___", "type": "function", "function": {"name": "ipython", "arguments": arguments}}
    messages = [{"role": "user", "content": "Hey"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    rendered = _probe(source, messages, None)
    return "argument_needle" in rendered and _ESCAPED_NEEDLE not in rendered


@lru_cache(maxsize=64)
def probe_caps(source: str) -> TemplateCaps:
    """Probe a template as llama.cpp's ``caps_get`` does."""
    content_probe: type[_ListAccessTracker] = type("_ContentProbe", (_ListAccessTracker,), {})
    _probe(source, [_ReadTracker(role="user", content=content_probe("content"))], None)

    system = _ReadTracker(role="system", content="System message")
    _probe(source, [system, _ReadTracker(role="user", content="User message")], [])
    return TemplateCaps(
        supports_system_role="content" in system.read_keys,
        requires_typed_content=content_probe.list_accessed,
        requires_object_arguments=(
            not _renders_arguments(source, json.dumps(_ARGUMENT_NEEDLE))
            and _renders_arguments(source, _ARGUMENT_NEEDLE)
        ),
    )


# --- the sandboxed Jinja environment with llama.cpp's options and built-ins ---


class _TemplateRaised(Exception):
    """``raise_exception()`` called by the template."""


class _RenderTimeout(Exception):
    pass


class _TooSlow(InputError):
    """Rendering hit the time limit; probes pass it on since the real render would hit it too."""


class _GenerationTags(Extension):
    """``{% generation %}`` blocks (transformers' assistant masks): llama.cpp ignores the tags."""

    tags = {"generation"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


class _LimitedSandbox(ImmutableSandboxedEnvironment):
    """Immutable sandbox that also stops runaway templates (time and size)."""

    intercepted_binops = frozenset({"*", "**", "+"})
    code_generator_class = concat_checking_code_generator()

    @staticmethod
    def checked_length(operator: str, value: Any) -> Any:
        if isinstance(value, (str, list)) and len(value) > MAX_OUTPUT_CHARS:
            raise SecurityError(f"'{operator}' result is too large")
        return value

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._per_thread = threading.local()
        bound_width_filters(self.filters, MAX_OUTPUT_CHARS, SecurityError)

    @property
    def deadline(self) -> float:
        return getattr(self._per_thread, "deadline", float("inf"))

    @deadline.setter
    def deadline(self, value: float) -> None:
        self._per_thread.deadline = value

    def check_deadline(self) -> None:
        if time.monotonic() > self.deadline:
            raise _RenderTimeout()

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        self.check_deadline()
        if operator == "**" and isinstance(right, int) and abs(right) > _MAX_EXPONENT:
            raise SecurityError(f"exponent {right} is too large")
        if operator == "*" and _repeated_size(left, right) > MAX_OUTPUT_CHARS:
            raise SecurityError("repetition result is too large")
        result = super().call_binop(context, operator, left, right)
        if isinstance(result, (str, list)) and len(result) > MAX_OUTPUT_CHARS:
            raise SecurityError("concatenation result is too large")
        return result

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.check_deadline()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.check_deadline()
        return super().getitem(obj, argument)

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.check_deadline()
        return super().call(context, obj, *args, **kwargs)


def _repeated_size(left: Any, right: Any) -> int:
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and isinstance(count, int):
            return len(sequence) * count
    return 0


def _raise_exception(message: Any = "") -> None:
    raise _TemplateRaised(str(message))


def _json_fallback(value: Any) -> Any:
    if isinstance(value, jinja2.Undefined):
        return None
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        return list(value)  # filters such as map() yield generators; llama.cpp's values are arrays
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Sequence[str] | None = None,
    sort_keys: bool = False,
) -> str:
    """llama.cpp's tojson: Python-style separators, raw UTF-8 by default, no HTML escaping."""
    if separators is None:
        separators = (", " if indent is None else ",", ": ")
    return json.dumps(
        value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=cast("tuple[str, str]", tuple(separators)),  # another length: json.dumps raises, as Python's would
        sort_keys=sort_keys,
        default=_json_fallback,
    )


@lru_cache(maxsize=1)
def _environment() -> _LimitedSandbox:
    env = _LimitedSandbox(
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=["jinja2.ext.loopcontrols", _GenerationTags],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    return env


@lru_cache(maxsize=128)
def _compile_cached(source: str) -> jinja2.Template | str:
    try:
        return bounded_parse(_environment().from_string, source)
    except jinja2.TemplateSyntaxError as exc:
        return f"line {exc.lineno}: {exc.message}"


def _compile(source: str, name: str) -> jinja2.Template:
    compiled = _compile_cached(source)
    if isinstance(compiled, str):
        raise InputError(
            f"{name}: the Jinja template does not parse ({compiled})",
            hint="llama.cpp refuses to load a template it cannot parse (use --chat-template to override)",
        )
    return compiled


def _render(compiled: jinja2.Template, context: dict[str, Any], name: str, now: datetime) -> str:
    env = _environment()
    context = {"strftime_now": lambda fmt: now.strftime(str(fmt)), **context}
    chunks: list[str] = []
    size = 0
    try:
        with memory_cap(RENDER_MEMORY_BYTES), _time_limit(env):
            for chunk in compiled.generate(context):
                size += len(chunk)
                if size > MAX_OUTPUT_CHARS:
                    raise InputError(f"{name}: rendering exceeds {MAX_OUTPUT_CHARS} characters")
                chunks.append(chunk)
                env.check_deadline()
    except _TemplateRaised as exc:
        raise InputError(f"{name}: the template raised an error: {exc}") from None
    except _RenderTimeout:
        raise _TooSlow(f"{name}: rendering took longer than {RENDER_TIMEOUT_SECONDS:g}s") from None
    except MemoryError:
        raise InputError(f"{name}: the template used more than the {RENDER_MEMORY_BYTES // 2**20} MiB render memory limit") from None
    except SecurityError as exc:
        raise InputError(f"{name}: the template tried an operation the sandbox forbids ({exc})") from None
    except (
        jinja2.TemplateError,
        TypeError,
        ValueError,
        KeyError,
        IndexError,
        AttributeError,
        ZeroDivisionError,
        OverflowError,
        RecursionError,
    ) as exc:
        raise InputError(f"{name}: the template failed to render ({type(exc).__name__}: {in_one_line(exc, 300)})") from None
    return "".join(chunks)


_timer_lock = threading.Lock()


@contextmanager
def _time_limit(env: _LimitedSandbox) -> Iterator[None]:
    """Deadline for the sandbox hooks, plus a SIGALRM timer for loops that call no hook (main thread only)."""
    env.deadline = time.monotonic() + RENDER_TIMEOUT_SECONDS
    use_alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not use_alarm or not _timer_lock.acquire(blocking=False):
        try:
            yield
        finally:
            env.deadline = float("inf")
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise _RenderTimeout()

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, RENDER_TIMEOUT_SECONDS + 1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, *previous_timer)
        signal.signal(signal.SIGALRM, previous_handler)
        env.deadline = float("inf")
        _timer_lock.release()
