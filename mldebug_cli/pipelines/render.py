"""render: one conversation rendered the way an engine renders it, and tokenized the way it tokenizes.

``render_with_engine`` is the one dispatch from a side to its engine's renderer; check-template uses it for
both sides. Every engine gets the same fixed clock, so date-dependent templates render reproducibly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.render.probes import read_conversation
from mldebug_cli.sources.deploy import Side, render_source_side

FIXED_NOW = datetime(2025, 1, 15, 12, 0)  # differs from the dates templates hard-code (e.g. Llama 3.1's 26 Jul 2024)


class EngineRenderError(Exception):
    """The engine failed to render the conversation (its own message is kept)."""


@dataclass(frozen=True)
class RenderOptions:
    messages: str
    tokenizer: str | None = None
    template: str | None = None
    gguf: str | None = None
    modelfile: str | None = None
    engine: str | None = None
    bos_token: str | None = None
    eos_token: str | None = None
    add_generation_prompt: bool = False
    variables: tuple[tuple[str, Any], ...] = ()
    now: datetime = FIXED_NOW
    trust_remote_code: bool = False


@dataclass(frozen=True)
class RenderedPrompt:
    prompt: str
    engine: str
    input_ids: tuple[int, ...] | None  # when a tokenizer is known

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt": self.prompt, "engine": self.engine}
        if self.input_ids is not None:
            out["input_ids"] = list(self.input_ids)
        return out


def build_prompt(options: RenderOptions) -> RenderedPrompt:
    conversation = read_conversation(options.messages)
    side = render_source_side(
        tokenizer=options.tokenizer,
        template=options.template,
        gguf=options.gguf,
        modelfile=options.modelfile,
        engine=options.engine,
        trust_remote_code=options.trust_remote_code,
    )
    side = with_token_overrides(side, options.bos_token, options.eos_token)
    try:
        prompt = render_with_engine(
            side, conversation.messages, conversation.tools, options.add_generation_prompt, options.now, dict(options.variables)
        )
    except EngineRenderError as exc:
        raise InputError(f"{side.template_source}: {side.engine} cannot render {options.messages}: {exc}") from None
    ids = tokenize(side, prompt, side.loaded.tokenizer) if side.loaded is not None else None
    return RenderedPrompt(prompt, side.engine, tuple(ids) if ids is not None else None)


def with_token_overrides(side: Side, bos: str | None, eos: str | None) -> Side:
    """``--bos-token``/``--eos-token`` replace what the template sees."""
    tokens = dict(side.special_tokens)
    if bos is not None:
        side, tokens["bos_token"] = replace(side, bos_text=bos), bos
    if eos is not None:
        side, tokens["eos_token"] = replace(side, eos_text=eos), eos
    return replace(side, special_tokens=tokens)


def parse_variables(pairs: Sequence[str]) -> tuple[tuple[str, Any], ...]:
    """``--var KEY=VALUE``: the value as JSON when it parses (true, 3, "x"), else the text itself."""
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise UsageError(f"--var {pair!r}: expected KEY=VALUE", hint="e.g. --var enable_thinking=false")
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.append((key.strip(), parsed))
    return tuple(out)


# ------------------------------------------------------------------------------ engine dispatch


def render_with_engine(
    side: Side,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    add_generation_prompt: bool,
    now: datetime = FIXED_NOW,
    variables: Mapping[str, Any] | None = None,
) -> str:
    """The prompt text ``side.engine`` builds from ``messages``; raises ``EngineRenderError``."""
    variables = dict(variables or {})
    fresh = json.loads(json.dumps(list(messages)))  # renderers may rewrite the messages they are given
    try:
        if side.engine in ("transformers", "vllm"):
            return _render_transformers(side, fresh, tools, add_generation_prompt, now, variables)
        if side.engine == "llamacpp":
            return _render_llamacpp(side, fresh, tools, add_generation_prompt, now, variables)
        if side.engine == "tgi":
            return _render_tgi(side, fresh, tools, now, variables)
        return _render_ollama(side, fresh, tools, now, variables)
    except InputError as exc:  # the engines' own render failures
        raise EngineRenderError(exc.message) from None


def _render_transformers(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError

    renderer = ChatRenderer(side.template, dict(side.special_tokens), variables)
    try:
        with _transformers_clock(now):
            return renderer.render(messages, list(tools) or None, add_generation_prompt).text
    except TemplateRenderError as exc:
        raise EngineRenderError(str(exc)) from None


def _render_llamacpp(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render.llamacpp import render_llamacpp

    enable_thinking = variables.pop("enable_thinking", None)
    return render_llamacpp(
        side.template,
        messages,
        bos_token=side.bos_text or "",
        eos_token=side.eos_text or "",
        add_bos=side.adds_bos,
        add_eos=side.adds_eos,
        add_generation_prompt=add_generation_prompt,
        tools=list(tools) or None,
        enable_thinking=enable_thinking,
        extra_vars=variables,
        now=now,
        template_name=side.template_source,
    ).prompt


def _render_tgi(side, messages, tools, now, variables) -> str:
    from mldebug_cli.render.tgi import render_tgi

    _only_variables(variables, ("guideline",), "tgi")
    return render_tgi(
        side.template,
        messages,
        bos_token=side.bos_text,
        eos_token=side.eos_text,
        tools=list(tools) or None,
        guideline=variables.get("guideline"),
        now=now,
        template_name=side.template_source,
    ).prompt


def _render_ollama(side, messages, tools, now, variables) -> str:
    from mldebug_cli.render import ollama

    _only_variables(variables, ("think",), "ollama")
    return ollama.render(
        side.template,
        messages,
        system=side.system,
        modelfile_messages=side.modelfile_messages,
        tools=list(tools) or None,
        think=variables.get("think"),
        today=now.date(),
    )


def _only_variables(variables: Mapping[str, Any], allowed: tuple[str, ...], engine: str) -> None:
    unknown = sorted(set(variables) - set(allowed))
    if unknown:
        raise UsageError(f"--var {unknown[0]}: {engine} passes no such variable to templates",
                         hint=f"{engine} takes only: {', '.join(allowed)}")  # fmt: skip


@contextmanager
def _transformers_clock(now: datetime) -> Iterator[None]:
    """transformers' ``strftime_now`` reads ``datetime.now()`` from its module: pin it for reproducible renders."""
    import transformers.utils.chat_template_utils as chat_utils

    class FixedClock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # noqa: ARG003 - same signature as datetime.now
            return now

    original = chat_utils.datetime
    chat_utils.datetime = FixedClock
    try:
        yield
    finally:
        chat_utils.datetime = original


# ---------------------------------------------------------------------------------- tokenization


def tokenize(side: Side, text: str, tokenizer: Any, bos_id: int | None = None, eos_id: int | None = None) -> list[int]:
    """Token ids of a rendered prompt as ``side``'s runtime builds them, using ``tokenizer``.

    Special-token text is parsed on every runtime; the runtime's own BOS/EOS ids (``bos_id``/``eos_id``,
    default the tokenizer's) are added when it adds them.
    """
    ids = tokenizer.encode(text, add_special_tokens=False)
    bos = bos_id if bos_id is not None else tokenizer.bos_token_id
    eos = eos_id if eos_id is not None else tokenizer.eos_token_id
    if side.adds_bos and bos is not None:
        ids = [bos, *ids]
    if side.adds_eos and eos is not None:
        ids = [*ids, eos]
    return ids
