"""Facts about a chat template learned by rendering a probe conversation once per run."""

from __future__ import annotations

from dataclasses import dataclass

from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError

SENTINEL = "MLDEBUG_PROBE_REPLY"


@dataclass(frozen=True)
class TemplateFacts:
    writes_bos: bool  # the rendered conversation starts with the BOS text
    footer: str | None  # what follows assistant content through the end of the turn, e.g. "<|im_end|>\n"
    end_of_turn: str | None  # the special token that closes assistant turns, e.g. "<|im_end|>"
    generation_prompt: str | None  # what add_generation_prompt appends, e.g. "<|im_start|>assistant\n"
    error: str | None = None  # the probe could not be rendered


def probe_template(renderer: ChatRenderer, bos_text: str | None, added_tokens: list[str]) -> TemplateFacts:
    user = [{"role": "user", "content": "Hello"}]
    try:
        prompt = renderer.render(user, add_generation_prompt=True).text
        bare = renderer.render(user).text
        full = renderer.render(user + [{"role": "assistant", "content": SENTINEL}]).text
    except TemplateRenderError as exc:
        return TemplateFacts(False, None, None, None, str(exc))
    after = full.find(SENTINEL)
    footer = full[after + len(SENTINEL):] if after >= 0 else None
    generation_prompt = prompt[len(bare):] if prompt.startswith(bare) and len(prompt) > len(bare) else None
    return TemplateFacts(
        writes_bos=bool(bos_text) and full.startswith(bos_text or ""),
        footer=footer,
        end_of_turn=_first_token_in(footer, added_tokens) if footer else None,
        generation_prompt=generation_prompt,
    )


def _first_token_in(text: str, tokens: list[str]) -> str | None:
    best: tuple[int, int, str] | None = None
    for token in tokens:
        at = text.find(token)
        if at >= 0 and token.strip() and (best is None or (at, -len(token)) < best[:2]):
            best = (at, -len(token), token)
    return best[2] if best else None
