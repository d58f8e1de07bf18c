"""transformers: ``apply_chat_template`` renders the Jinja template (sandboxed, trim_blocks and lstrip_blocks) and the
prompt is tokenized without special tokens; generation stops on the EOS and generation_config.json's eos_token_id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from mldebug_cli.engines import sides
from mldebug_cli.engines.engine import Engine
from mldebug_cli.engines.errors import EngineRenderError


def render(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError

    renderer = ChatRenderer(side.template, dict(side.special_tokens), variables)
    try:
        with _transformers_clock(now):
            return renderer.render(messages, list(tools) or None, add_generation_prompt).text
    except TemplateRenderError as exc:
        raise EngineRenderError(str(exc)) from None


@contextmanager
def _transformers_clock(now: datetime) -> Iterator[None]:
    """transformers' ``strftime_now`` reads ``datetime.now()`` from its module: pin it for reproducible renders."""
    import transformers.utils.chat_template_utils as chat_utils

    class FixedClock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]  # noqa: ARG003 - datetime.now's signature
            return now

    original = chat_utils.datetime
    vars(chat_utils)["datetime"] = FixedClock
    try:
        yield
    finally:
        vars(chat_utils)["datetime"] = original


ENGINE: Engine = Engine(
    name="transformers",
    deploy_side=lambda spec, kind, train, trust: sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust),
    render_side=lambda source: sides.render_side(ENGINE, source),
    render=render,
    image_messages=lambda side, messages: messages,  # processor.apply_chat_template renders the parts as given
)
