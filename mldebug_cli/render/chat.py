"""Rendering conversations exactly as ``apply_chat_template`` does, with transformers' own renderer.

transformers compiles the template in its sandboxed Jinja environment and drops ``None``-valued
message keys first; we do the same, and also return the ``{% generation %}`` character spans.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")


class TemplateRenderError(Exception):
    """The chat template raised while rendering (its own message is kept)."""


@dataclass(frozen=True)
class RenderedChat:
    text: str
    generation_spans: tuple[tuple[int, int], ...] = ()


class ChatRenderer:
    """Renders messages with one template and one tokenizer's special tokens."""

    def __init__(self, template: str, special_tokens: dict[str, Any], extra_kwargs: dict[str, Any] | None = None):
        self.template = template
        self.has_generation_markers = bool(GENERATION_TAG.search(template))
        self.kwargs = {**special_tokens, **(extra_kwargs or {})}

    @classmethod
    def for_tokenizer(cls, tokenizer, template: str, extra_kwargs: dict[str, Any] | None = None) -> ChatRenderer:
        return cls(template, dict(tokenizer.special_tokens_map), extra_kwargs)

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list[Any] | None = None,
        add_generation_prompt: bool = False,
        with_generation_spans: bool = False,
    ) -> RenderedChat:
        from transformers.utils.chat_template_utils import render_jinja_template

        cleaned = [{k: v for k, v in m.items() if v is not None} for m in messages]
        spans_wanted = with_generation_spans and self.has_generation_markers
        try:
            rendered, spans = render_jinja_template(
                conversations=[cleaned],
                tools=tools,
                chat_template=self.template,
                return_assistant_tokens_mask=spans_wanted,
                add_generation_prompt=add_generation_prompt,
                **self.kwargs,
            )
        except RecursionError:
            raise TemplateRenderError("the template recursed too deeply") from None
        except Exception as exc:  # any error raised inside the template is the template's error
            raise TemplateRenderError(_describe(exc)) from None
        return RenderedChat(rendered[0], tuple(tuple(s) for s in spans[0]) if spans_wanted else ())


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
