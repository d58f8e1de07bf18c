"""render: one conversation rendered the way an engine renders it, and tokenized the way it tokenizes.

``render_with_engine`` (mldebug_cli.engines.registry) is the one dispatch from a side to its engine's renderer;
check-template uses it for both sides. Every engine gets the same fixed clock, so date-dependent templates render
reproducibly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.engines.registry import FIXED_NOW, EngineRenderError, render_source_side, render_with_engine
from mldebug_cli.render.probes import read_conversation
from mldebug_cli.sources.deploy import Side

__all__ = ["FIXED_NOW", "EngineRenderError", "RenderOptions", "RenderedPrompt", "build_prompt", "render_with_engine",
           "tokenize"]

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
