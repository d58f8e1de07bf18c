"""Render a conversation the way Hugging Face TGI's router does (minijinja, not Jinja2).

Follows huggingface/text-generation-inference ``router/src/infer/chat_template.rs``: a default
``minijinja::Environment`` (no trim_blocks / lstrip_blocks, trailing newline dropped, lenient
undefined), minijinja-contrib's Python-compatible methods (``.strip()``, ``.items()``...), the
``raise_exception`` and ``strftime_now`` functions, ``add_generation_prompt`` always true, messages
reduced to ``{role, content}`` text, tools appended to the last message, and a final assistant
message continued instead of closed. minijinja's own ``tojson`` is kept: it escapes ``<``, ``>``,
``&`` and ``'`` as ``\\u003c``... where transformers writes them as-is.

The render itself runs in a child process (``render/tgi_process.py``) within chat.py's time and memory
limits, since minijinja aborts its process when an allocation fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.render import tgi_process
from mldebug_cli.render.chat import RenderLimitError

# TGI's default_tool_prompt() (router/src/lib.rs).
DEFAULT_TOOL_PROMPT = (
    "\nGiven the functions available, please respond with a JSON for a function call with its proper arguments "
    "that best answers the given prompt. Respond in the format {name: function name, parameters: dictionary of "
    "argument name and its value}.Do not use variables.\n"
)
FUEL = 50_000_000  # minijinja's instruction budget: stops runaway loops without a timer

# Textual rewrites TGI applies to every template before parsing: (rule, pattern, replacement).
_TEMPLATE_REWRITES = (
    ("gemma3_content_rewrite", "messages[0]['content'][0]['text']", "messages[0]['content']"),
    ("reverse_slice_rewrite", "[::-1]", "|reverse"),
    ("generation_tags_removed", "{% generation %}", ""),
    ("generation_tags_removed", "{% endgeneration %}", ""),
)

RULE_DESCRIPTIONS: Mapping[str, str] = {
    "gemma3_content_rewrite": "TGI rewrites messages[0]['content'][0]['text'] to messages[0]['content']",
    "reverse_slice_rewrite": "TGI rewrites the [::-1] slice to the |reverse filter",
    "generation_tags_removed": "TGI deletes {% generation %} / {% endgeneration %} tags",
    "content_parts_flattened": "content parts are concatenated into one string; images become ![](url)",
    "tool_calls_as_content": "an assistant message's tool calls are passed as JSON text in content",
    "extra_message_keys_dropped": "TGI passes only role and content of each message",
    "tools_appended_to_last_message": "with tools, TGI appends the tool prompt (and, when the template "
    "does not use `tools`, the tools as JSON) to the last message",
    "final_assistant_continued": "the conversation ends with an assistant message, so TGI cuts the "
    "prompt right after its content to let the model continue it",
}


@dataclass(frozen=True)
class TGIRenderResult:
    prompt: str
    rules_applied: tuple[str, ...]


class TGIRenderLimitError(InputError, RenderLimitError):
    """The render stopped at a render limit: an input error to the render pipeline, a RenderLimitError to others."""


def render_tgi(
    template: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    bos_token: str | None,
    eos_token: str | None,
    tools: Sequence[Any] | None = None,
    tool_prompt: str = DEFAULT_TOOL_PROMPT,
    guideline: str | None = None,
    now: datetime | None = None,
    template_name: str = "chat template",
) -> TGIRenderResult:
    """Render ``messages`` as TGI's ``/v1/chat/completions`` would before tokenizing."""
    minijinja = _import_minijinja()
    rules: list[str] = []
    source = _rewrite(template, rules)
    text_messages = [_as_text_message(m, rules) for m in messages]
    if tools:
        _append_tools(text_messages, tools, tool_prompt, _uses_tools(source, template_name, minijinja), rules)
    # Serde turns TGI's absent Option fields into none, not undefined.
    context: dict[str, Any] = {
        "messages": text_messages,
        "bos_token": bos_token,
        "eos_token": eos_token,
        "add_generation_prompt": True,
        "tools": list(tools) if tools else None,
    }
    if guideline is not None:
        context["guideline"] = guideline
    rendered = _render(source, context, template_name, now or datetime.now())
    return TGIRenderResult(prompt=_continue_final_assistant(rendered, text_messages, rules), rules_applied=tuple(rules))


def _import_minijinja() -> Any:
    try:
        import minijinja
    except ImportError:
        raise InputError(
            "rendering as TGI needs the minijinja package, which is not installed (pip install 'mldebug[tgi]')",
            hint="pip install 'mldebug[tgi]'",
        ) from None
    return minijinja


def _rewrite(template: str, rules: list[str]) -> str:
    for rule, pattern, replacement in _TEMPLATE_REWRITES:
        if pattern in template:
            template = template.replace(pattern, replacement)
            _note(rules, rule)
    return template


def _note(rules: list[str], rule: str) -> None:
    if rule not in rules:
        rules.append(rule)


def _as_text_message(message: Mapping[str, Any], rules: list[str]) -> dict[str, str]:
    """TGI's ``From<Message> for TextMessage``: role and one content string."""
    if set(message) - {"role", "content", "tool_calls"}:
        _note(rules, "extra_message_keys_dropped")
    content = message.get("content")
    if message.get("tool_calls") and not content:
        _note(rules, "tool_calls_as_content")
        content = json.dumps(message["tool_calls"], ensure_ascii=False, separators=(",", ":"))
    elif isinstance(content, list):
        _note(rules, "content_parts_flattened")
        content = "".join(_chunk_text(part) for part in content)
    return {"role": str(message.get("role", "")), "content": "" if content is None else str(content)}


def _chunk_text(part: Any) -> str:
    if isinstance(part, Mapping) and part.get("type") == "image_url":
        image = part.get("image_url")
        return f"![]({image.get('url', '') if isinstance(image, Mapping) else image})"
    if isinstance(part, Mapping):
        return str(part.get("text", ""))
    return str(part)


def _uses_tools(source: str, name: str, minijinja: Any) -> bool:
    try:  # parsing only: the memory it takes is bounded by the template's size
        return "tools" in minijinja.Environment().undeclared_variables_in_str(source)
    except minijinja.TemplateError as exc:
        raise InputError(f"{name}: minijinja cannot parse the template ({_one_line(exc)})") from None


def _append_tools(
    messages: list[dict[str, str]], tools: Sequence[Any], tool_prompt: str, template_uses_tools: bool, rules: list[str]
) -> None:
    if not messages:
        return
    if template_uses_tools:
        addition = f"\n---\n{tool_prompt}"
    else:
        addition = f"\n---\n{json.dumps(list(tools), ensure_ascii=False, separators=(',', ':'))}\n{tool_prompt}"
    messages[-1]["content"] += addition
    rules.append("tools_appended_to_last_message")


def _continue_final_assistant(rendered: str, messages: list[dict[str, str]], rules: list[str]) -> str:
    """As transformers' pipeline does: cut after the last occurrence of the final assistant content."""
    if not messages or messages[-1]["role"] != "assistant":
        return rendered
    content = messages[-1]["content"]
    index = rendered.rfind(content)
    if index < 0:
        return rendered
    rules.append("final_assistant_continued")
    return rendered[: index + len(content)].rstrip()


def _render(source: str, context: dict[str, Any], name: str, now: datetime) -> str:
    try:
        return tgi_process.render(source, context, now=now, fuel=FUEL)
    except tgi_process.TemplateRaised as exc:
        raise InputError(f"{name}: the template raised an error: {exc}") from None
    except tgi_process.MinijinjaError as exc:
        raise InputError(f"{name}: minijinja failed to render the template ({_one_line(exc)})") from None
    except RenderLimitError as exc:
        raise TGIRenderLimitError(f"{name}: {exc}") from None
    except tgi_process.RenderProcessError as exc:
        raise InputError(f"{name}: {exc}") from None


def _one_line(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()
    return first[0][:300] if first else type(exc).__name__
