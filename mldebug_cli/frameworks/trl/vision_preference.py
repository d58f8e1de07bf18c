"""TRL's vision DPO path: how DPOTrainer (TRL 1.16) turns a preference row with images into two sequences.

What TRL does (``trl/trainer/dpo_trainer.py`` DataCollatorForVisionPreference, ``trl/data_utils.py``
apply_chat_template), checked row for row against TRL itself (tests/goldens/trl_vision.py):

- A dataset whose first row has an ``image`` or ``images`` column is a vision dataset: nothing is prepared ahead (no
  prompt extraction, no row dropped); the collator processes each batch. ``truncation_mode: keep_end`` (with a
  max_length) and ``precompute_ref_log_probs`` are refused (ValueError), ``pad_to_multiple_of`` too
  (NotImplementedError).
- A row without a ``prompt`` column raises KeyError: 'prompt'. The prompt gets the images
  (prepare_multimodal_messages, as for SFT); chosen and rejected are prepared with none, so an image part in a reply
  raises the placeholder-count ValueError.
- The prompt is rendered with the generation prompt (or continued when it ends with an assistant turn; any other last
  role raises ValueError), then cut to what it shares with the rendered prompt+chosen and prompt+rejected; each reply
  is the rest of its rendering.
- The processor tokenizes the prompt with the row's images (each placeholder expanded into its tokens) and each reply
  alone with none (a placeholder there raises ValueError); a side is prompt ids + reply ids, cut to ``max_length``
  (1024 by default), and only the reply's tokens are trained (``completion_mask``).
- The cut never raises in the collator: a cut inside an image's tokens fails in the model's forward ("Image features
  and image tokens do not match", re-raised by DPOTrainer as a too-short ``max_length``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.framework import VisionPath
from mldebug_cli.frameworks.trl.vision import (
    DEFAULT_MAX_LENGTH,
    EMULATED_TRL,
    RowRefused,
    VisionProcessor,
    VisionRow,
    assistant_header,
    expand_images,
    prepare_messages,
    read_infos,
    record_row,
    row_images,
)
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.images import ImageReader

SIDES = ("chosen", "rejected")
CUT_CONSEQUENCE = ("the model raises ValueError (Image features and image tokens do not match) at the first batch "
                   "holding the row; TRL's DPOTrainer re-raises it as max_length too short")


def encode_pair(index: int, line: int | None, raw: Any, processor: VisionProcessor, images_from: ImageReader,
                max_length: int | None) -> VisionRow:
    """The row's chosen side (its ``rejected`` the other) as TRL's vision preference collator makes them; a refusal
    or image problems on the chosen side when it cannot."""
    row = VisionRow(index, line, cut_consequence=CUT_CONSEQUENCE)
    try:
        messages, prompt_text, replies, images = _texts(raw, processor)
    except RowRefused as refused:
        row.refused = refused
        return row
    infos = read_infos(row, images, images_from)
    if row.image_problems:
        return row
    prompt = VisionRow(index, line, text=prompt_text, rendered=prompt_text, messages=messages)
    expand_images(prompt, infos, processor, None)
    if prompt.refused is not None or prompt.image_problems:
        row.refused, row.image_problems, row.rendered = prompt.refused, prompt.image_problems, prompt_text
        return row
    sides = [reply_row(prompt, side, reply, processor, max_length, CUT_CONSEQUENCE) for side, reply in zip(SIDES, replies)]
    for side in sides:
        if side.refused is not None:
            row.refused, row.rendered = side.refused, side.rendered
            return row
    chosen, rejected = sides
    chosen.rejected = rejected
    return chosen


def _texts(raw: Any, processor: VisionProcessor) -> tuple[list[dict[str, Any]], str, tuple[str, str], list[Any]]:
    """(the prompt's messages, its text, (chosen's text, rejected's text), the row's images) as TRL prepares them and
    its apply_chat_template cuts them."""
    prompt, prompt_text, (chosen, rejected), images = prompt_and_replies(raw, processor, SIDES, "DataCollatorForVisionPreference")
    return prompt, prompt_text, (chosen, rejected), images


def prompt_and_replies(raw: Any, processor: VisionProcessor, sides: tuple[str, ...],
                       collator: str) -> tuple[list[dict[str, Any]], str, tuple[str, ...], list[Any]]:
    """(the prompt's messages, its text, each side's reply text, the row's images) as TRL's vision preference
    collators (``collator``) prepare them and its apply_chat_template cuts them: the prompt rendered with the
    generation prompt (continued after an assistant turn), cut to what it shares with each prompt+reply rendering."""
    if not isinstance(raw, Mapping):
        raise RowRefused(Code.INVALID_MESSAGES, f"the row is a {type(raw).__name__}, not an object", "write one object per row")
    if "prompt" not in raw:
        raise RowRefused(Code.INVALID_MESSAGES, f"no prompt column: TRL's {collator} raises KeyError: 'prompt' "
                         f"(image rows are not prepared ahead, so no prompt is extracted from {'/'.join(sides)})",
                         "add a prompt column (the messages before the replies)"
                         + ("; chosen/rejected keep the replies" if len(sides) > 1 else ""))
    if not conversational(raw["prompt"]):
        raise UsageError(f"image {'DPO' if len(sides) == 2 else 'KTO'} rows with a string prompt are not emulated: "
                         f"mldebug emulates TRL's {collator} on conversational rows (prompt and "
                         f"{' and '.join(sides)} as role/content messages)",
                         hint="write the prompt as messages with {\"type\": \"image\"} parts, or drop the image columns")
    images = row_images(raw)
    prompt = prepare_messages(raw["prompt"], len(images))
    replies = [reply_messages(raw, side) for side in sides]
    last = prompt[-1]["role"]
    if last not in ("user", "tool", "assistant"):
        raise RowRefused(Code.UNMAPPED_ROLE, f"the prompt ends with a {last} turn: TRL's apply_chat_template raises ValueError "
                         f"(Invalid role in the last message: {last})", "end the prompt with a user turn", len(prompt) - 1)
    render = renderer(processor)
    continued = last == "assistant"
    prompt_text = render(prompt, add_generation_prompt=not continued, continue_final_message=continued)
    joined = [render(prompt + reply) for reply in replies]
    for text in joined:
        prompt_text = prompt_text[:shared_prefix(prompt_text, text)]
    return prompt, prompt_text, tuple(text[len(prompt_text):] for text in joined), images


def reply_messages(raw: Mapping[str, Any], side: str) -> list[dict[str, Any]]:
    """A reply prepared with no image (an image part there is TRL's placeholder-count ValueError)."""
    try:
        return prepare_messages(_messages(raw, side), 0)
    except RowRefused as refused:
        hint = "images go in the prompt: take the image parts out of the replies" if refused.code == Code.IMAGE_PLACEHOLDER_MISMATCH else \
            refused.hint
        raise RowRefused(refused.code, f"{side}: {refused.message}", hint, refused.message_index) from None


def _messages(raw: Mapping[str, Any], side: str) -> Any:
    if side not in raw:
        raise RowRefused(Code.INVALID_MESSAGES, f"no {side} column: TRL's preference collator raises KeyError: {side!r}",
                         f"give each row a {side} reply")
    value = raw[side]
    if not isinstance(value, list):
        raise RowRefused(Code.INVALID_MESSAGES, f"{side} is a {type(value).__name__}, not a list of messages",
                         f"write {side} as [{{\"role\": \"assistant\", \"content\": ...}}]")
    return value


def renderer(processor: VisionProcessor) -> Any:
    def render(messages: list[dict[str, Any]], **flags: bool) -> str:
        try:
            return str(processor.tokenizer.apply_chat_template(messages, chat_template=processor.chat_template,
                                                               tokenize=False, **flags))
        except Exception as exc:  # noqa: BLE001 - jinja2 and the template's raise_exception raise anything
            raise RowRefused(Code.TEMPLATE_ERROR, f"the chat template raises: {str(exc).splitlines()[0] if str(exc) else exc}",
                             "fix the row or the template") from None
    return render


def shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def reply_row(prompt: VisionRow, side: str | None, reply: str, processor: VisionProcessor, max_length: int | None,
              cut_consequence: str) -> VisionRow:
    """prompt ids + the reply's ids (tokenized alone, no image), cut to max_length; the reply's tokens trained
    (``side``: chosen or rejected; None: KTO's one completion)."""
    row = replace(prompt, side=side, cut_consequence=cut_consequence, rendered=prompt.rendered + reply)
    placeholders = reply.count(processor.image_placeholder)
    if placeholders:
        row.refused = RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"the {side or 'completion'} reply has {placeholders} {processor.image_placeholder} token(s) and "
                                 "no image: the processor raises ValueError (tokens in the text but no images were "
                                 "passed)", "take image placeholders out of the replies; images go in the prompt")
        return row
    encoding = processor.tokenizer.backend_tokenizer.encode(reply, add_special_tokens=False)
    ids = list(prompt.input_ids) + list(encoding.ids)
    labels = [IGNORE_INDEX] * len(prompt.input_ids) + list(encoding.ids)
    shift = len(prompt.rendered)
    offsets = list(prompt.offsets) + [(start + shift, end + shift) for start, end in encoding.offsets]
    keep = len(ids) if max_length is None else max_length
    row.full_length = len(ids)
    row.text_length = prompt.text_length + len(encoding.ids)
    row.input_ids, row.labels, row.offsets = ids[:keep], labels[:keep], offsets[:keep]
    row.images = list(prompt.images)
    return row


def conversational(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], Mapping) and "role" in value[0]


# --- inspect-data's vision path (Framework.vision) ------------------------------------------------------------

def vision_path(options: Any, processor: VisionProcessor, base: Path) -> VisionPath:
    """inspect-data's vision path for TRL's DPO collator."""
    _refuse_settings(options)
    images = ImageReader(base)
    max_length = options.max_length if options.max_length is not None else DEFAULT_MAX_LENGTH
    return VisionPath(
        lambda record: record_row(record, encode_pair, processor, images, max_length), max_length, assistant_header(processor),
        {"format": "preference rows with images (TRL vision DPO: images column, prompt/chosen/rejected messages)",
         "chat_template": processor.template_source,
         "framework": f"TRL {EMULATED_TRL} DataCollatorForVisionPreference: max_length {max_length}, each side "
                      "prompt + reply cut at its end, no row dropped, the reply's tokens trained",
         "train_on": "completion"})


def _refuse_settings(options: Any) -> None:
    """What TRL's DPOTrainer raises for a vision dataset with these settings."""
    if options.truncation_mode == "keep_end":
        raise UsageError("TRL's DPOTrainer raises ValueError on image rows with truncation_mode keep_end",
                         hint="use keep_start (the default)")
    if options.train_on not in (None, "completion"):
        raise UsageError(f"--train-on {options.train_on} on image DPO rows is not emulated: TRL's DPO collator trains "
                         "the replies", hint="leave --train-on unset")
