"""vLLM's chat route: the tokenizer's Jinja template rendered as transformers renders it, the prompt tokenized
without special tokens (``ChatCompletionRequest.add_special_tokens=False``), generation stopped on the EOS and
generation_config.json's eos_token_id. The default engine for a tokenizer folder or a ``.jinja``.

Image conversations (vLLM 0.33.0, held to its own parsing code: tests/engines/test_vllm_multimodal.py): a model
folder's processor template is used before the tokenizer's; the template's content format is detected from its
syntax (``render.content_format``). "openai": every content becomes a list of parts, an image part
``{"type": "image"}``. "string": a message's text parts (empty ones left out) are joined by "\\n", the model's
image marker put in front, once per image of that message, less the markers the text already holds (more in the
text than images: vLLM refuses the request). Served with ``--interleave-mm-strings`` (``Side.interleave_images``;
tools/vllm_mm_interleave_goldens.py), the "string" format puts each image's marker where its part is, joined with the
text parts by "\n"; a text part that is exactly vLLM's sentinel ``<##IMAGE##>`` takes the next image's marker, and
more of them than images is vLLM's refusal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mldebug_cli.engines import hf, sides
from mldebug_cli.engines.engine import Engine
from mldebug_cli.engines.errors import EngineRenderError
from mldebug_cli.sources.deploy import Side
from mldebug_cli.sources.processor_files import IMAGE_MARKERS

SENTINEL = "<##IMAGE##>"  # what vLLM's parser puts for an image part before it interleaves the model's marker


def image_messages(side: Side, messages: list) -> list:
    """The conversation vLLM's chat route hands the template for ``messages`` (training shape: image parts as
    ``{"type": "image"}``)."""
    from mldebug_cli.render.content_format import content_format

    marker = IMAGE_MARKERS.get(side.processor_class or "")
    if marker is None:
        raise EngineRenderError(f"vLLM's image placeholder for processor class {side.processor_class or '(none)'!r} "
                                f"is not known to mldebug (known: {', '.join(sorted(IMAGE_MARKERS))})")
    as_parts = side.template is not None and content_format(side.template) == "openai"
    return [_message(m, marker, as_parts, side.interleave_images) for m in messages]


def _message(message: Mapping[str, Any], marker: str, as_parts: bool, interleave: bool) -> dict[str, Any]:
    content = message.get("content")
    parts = [] if content is None else [{"type": "text", "text": content}] if isinstance(content, str) else content
    texts: list[str] = []  # the text parts, and with interleave each image's sentinel where its part is
    kept: list[dict[str, Any]] = []
    images = 0
    for part in parts:
        kind = part.get("type") if isinstance(part, Mapping) else "text"
        if kind == "image":
            images += 1
            kept.append({"type": "image"})
            texts += [SENTINEL] if interleave else []
        elif kind == "text":
            text = part.get("text") if isinstance(part, Mapping) else part
            if text is not None:  # vLLM skips a text part without text, and an empty one when it joins strings
                texts += [text] if text else []
                kept.append({"type": "text", "text": text})
        else:
            raise EngineRenderError(f"vLLM's chat route refuses a content part of type {kind!r} here")
    out = {k: v for k, v in message.items() if k not in ("role", "content")}
    if as_parts:
        return {"role": message.get("role"), "content": kept, **out}
    if interleave and images:
        texts = _interleaved(texts, marker, images)
    text = "\n".join(texts)
    missing = images - text.count(marker) if images else 0
    if missing < 0:
        raise _too_many(marker)
    joined = "\n".join([marker] * missing + ([text] if text else []))
    return {"role": message.get("role"), "content": joined, **out}


def _interleaved(texts: list[str], marker: str, images: int) -> list[str]:
    """Each sentinel (an image part's, or a text part that is the sentinel itself) given the next image's marker, in
    order; one past the images is vLLM's refusal."""
    out = []
    for text in texts:
        if text == SENTINEL:
            if not images:
                raise _too_many(SENTINEL)
            images -= 1
            text = marker
        out.append(text)
    return out


def _too_many(marker: str) -> EngineRenderError:
    return EngineRenderError(f"vLLM refuses it: \"Found more '{marker}' placeholders in input prompt than actual "
                             "multimodal data items.\"")


ENGINE: Engine = Engine(
    name="vllm",
    deploy_side=lambda spec, kind, train, trust: sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust),
    render_side=None,
    render=hf.render,
    image_messages=image_messages,
    interleaves_images=True,
)
