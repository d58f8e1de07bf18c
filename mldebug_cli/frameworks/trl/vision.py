"""TRL's vision SFT path: how SFTTrainer (TRL 1.16) turns a row with images into ids and labels.

What TRL does (``trl/trainer/sft_trainer.py`` DataCollatorForVisionLanguageModeling, ``trl/data_utils.py``
prepare_multimodal_messages), checked row for row against TRL itself (tests/goldens/trl_vision.py):

- A dataset whose first row has an ``image`` or ``images`` column is a vision dataset: it is not tokenized ahead,
  no row is dropped; the collator processes each batch. Packing, padding_free and ``truncation_mode: keep_end`` are
  refused (ValueError).
- Messages: string contents become text parts; when every content is a string, one ``{"type": "image"}`` part per
  image goes before the first user message's text. The ``{"type": "image"}`` parts without an image must number the
  images exactly (else ValueError: "Number of images provided (N) does not match number of image placeholders (M)");
  a role other than system/user/assistant/tool raises ValueError.
- The processor renders the conversation with its chat template, expands each image's placeholder into its tokens
  (the image processor's resize decides how many), and tokenizes without special tokens, cut to ``max_length``
  (1024 by default). A cut that removes part of an image's tokens makes the processor raise ValueError
  ("Mismatch in `image` token count"): the run stops at that batch.
- Labels are the input ids (padding masked): every token is trained, the image tokens included.

The expansion is read from the model's own image processor (``get_number_of_image_patches``), from the header's size
alone, for the processor classes below; others are refused by name. Gemma 3's processor wraps each image: the
template writes ``<start_of_image>``, the processor replaces it with ``\n\n<start_of_image>``, ``image_seq_length``
(256) ``<image_soft_token>`` and ``<end_of_image>\n\n`` (its ``full_image_sequence``); its image processor resizes
every image to one square; pan-and-scan (off unless the folder turns it on) is refused. Idefics3's processor
(Idefics3-8B, SmolVLM) splits an image larger than a tile into rows x columns of tiles plus a global view
(``get_number_of_image_patches`` from the size alone) and writes each tile as ``<fake_token_around_image>``, its
``<row_R_col_C>`` tag and ``image_seq_len`` ``<image>`` tokens, a newline after each row, then the global view
(``<fake_token_around_image><global-img>``, its ``<image>`` tokens, ``<fake_token_around_image>``): the whole run is the
image's block, and a cut anywhere in it stops the run (the processor's TypeError or ValueError).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.rows import ImageLine
from mldebug_cli.frameworks.framework import VisionPath
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.dataset import Record
from mldebug_cli.sources.images import ImageInfo, ImageProblem, ImageReader

EMULATED_TRL = "1.16.0"
DEFAULT_MAX_LENGTH = 1024
ROLES = ("system", "user", "assistant", "tool")
# processor classes whose placeholder becomes ``image_token`` repeated (replace_image_token), by its default token:
# Qwen2-VL ``patches // merge_size**2`` times, LLaVA once per patch of the cropped image (+ CLS, - 1 for "default")
REPEATING_PROCESSORS = {"Qwen2VLProcessor": "<|image_pad|>", "Qwen2_5_VLProcessor": "<|image_pad|>",
                        "LlavaProcessor": "<image>"}
# processor classes whose placeholder becomes a wrapped sequence (the processor's own replace_image_token)
WRAPPING_PROCESSORS = frozenset({"Gemma3Processor", "Idefics3Processor"})
TILING_PROCESSORS = frozenset({"Idefics3Processor"})  # an image's block is its whole expansion (tiles and tags)
EMULATED_PROCESSORS = frozenset(REPEATING_PROCESSORS) | WRAPPING_PROCESSORS
QWEN_PROCESSORS = frozenset({"Qwen2VLProcessor", "Qwen2_5_VLProcessor"})
IMAGE_COLUMNS = ("images", "image")


class RowRefused(Exception):
    """What TRL raises on this row (the run stops at its batch); ``code`` is the check that reports it."""

    def __init__(self, code: str, message: str, hint: str, message_index: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.message_index = message_index


@dataclass
class VisionRow:
    """One row as TRL's vision collator makes it."""

    index: int
    line: int | None
    text: str = ""  # the rendered conversation, placeholders expanded
    rendered: str = ""  # the rendered conversation, one placeholder per image
    offsets: list[tuple[int, int]] = field(default_factory=list)  # each kept token's span in ``rendered``
    input_ids: list[int] = field(default_factory=list)  # after truncation
    labels: list[int] = field(default_factory=list)
    full_length: int = 0  # before truncation
    images: list[ImageLine] = field(default_factory=list)
    image_problems: list[tuple[int, ImageProblem]] = field(default_factory=list)  # (image index, what is wrong)
    refused: RowRefused | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)  # as prepared for the template
    text_length: int = 0  # tokens of the row with no image token
    dropped: str | None = None  # why the framework leaves the row out of training (it never reaches a batch)
    # image index -> its tokens the cut kept, where the framework cuts elsewhere than at the row's end (LLaMA-Factory)
    kept_image_tokens: dict[int, int] = field(default_factory=dict)
    cut_consequence: str = "the processor raises ValueError (image token count mismatch) and the run fails"
    cut_literal: int = 0  # image tokens written literally in the text that the cut removes (the processor's count differs)
    side: str | None = None  # preference rows: "chosen" or "rejected" (None: a single sequence)
    rejected: VisionRow | None = None  # preference rows: the rejected side, on the chosen side's row
    unused_images: int = 0  # images of the row's column that the framework leaves out (axolotl: all but the first)

    @property
    def truncated(self) -> bool:
        return self.full_length > len(self.input_ids)

    def kept_tokens(self, image: ImageLine) -> int:
        """How many of an image's tokens the cut kept."""
        if image.index in self.kept_image_tokens:
            return self.kept_image_tokens[image.index]
        return max(0, min(image.tokens, len(self.input_ids) - image.start))

    @property
    def cut_images(self) -> list[ImageLine]:
        """Images whose tokens the cut splits or removes."""
        return [image for image in self.images if self.kept_tokens(image) < image.tokens]


@dataclass(frozen=True)
class VisionProcessor:
    """The model's processor, read from its folder: tokenizer, image processor and chat template."""

    folder: str
    processor_class: str
    tokenizer: Any  # a transformers fast tokenizer
    image_processor: Any  # the model's image processor (transformers)
    chat_template: str
    template_source: str
    image_token: str  # the token each image becomes (counted, trained, cut)
    image_token_id: int
    processor: Any = None  # the transformers processor, where it counts the tokens itself (LLaVA, Gemma 3)
    placeholder: str = ""  # what the template writes for an image ("" : image_token itself)
    unused_setting: str = ""  # a setting of the folder the processor does not apply when the trainer calls it

    @property
    def image_placeholder(self) -> str:
        return self.placeholder or self.image_token

    def expansion(self, height: int, width: int, tokens: int) -> str:
        """The text the processor puts in the placeholder's place for an image of this size (``tokens`` its image
        tokens), written by the processor's own replace_image_token where it wraps or tiles the image."""
        if self.processor_class == "Gemma3Processor":  # pan-and-scan refused at load: no crops
            return str(self.processor.replace_image_token({"num_crops": [0]}, 0))
        if self.processor_class in TILING_PROCESSORS:
            _, rows, cols = self.image_processor.get_number_of_image_patches(height, width, {})
            return str(self.processor.replace_image_token({"rows": [[rows]], "cols": [[cols]]}, 0))
        return self.image_token * tokens

    def size_after_resize(self, height: int, width: int) -> tuple[int, int, int]:
        """(resized height, resized width, image tokens) as the image processor decides them from the size alone."""
        if self.processor_class in TILING_PROCESSORS:  # tiles of max_image_size, plus the global view
            patches, rows, cols = self.image_processor.get_number_of_image_patches(height, width, {})
            tile = self.image_processor.max_image_size["longest_edge"]
            views = rows * cols + 1 if patches else 1
            return max(rows, 1) * tile, max(cols, 1) * tile, views * self.processor.image_seq_len
        if self.processor is not None:  # every image resized (and centre-cropped, LLaVA) to one size
            crop = getattr(self.image_processor, "crop_size", None) or self.image_processor.size
            tokens = self.processor._get_num_multimodal_tokens(image_sizes=[(height, width)])["num_image_tokens"][0]
            return crop["height"], crop["width"], tokens
        import importlib

        image_processor = self.image_processor
        module = importlib.import_module(type(image_processor).__module__)
        patch, merge = image_processor.patch_size, image_processor.merge_size
        size = image_processor.size
        resized_h, resized_w = module.smart_resize(height, width, patch * merge, min_pixels=size["shortest_edge"],
                                                   max_pixels=size["longest_edge"])
        patches = image_processor.get_number_of_image_patches(height, width, {})
        return resized_h, resized_w, patches // merge**2

    def describe(self) -> str:
        unused = (f"; {self.unused_setting}: true is not applied: the processor's own default (false) wins when the "
                  "trainer calls it, so no pan-and-scan crops" if self.unused_setting else "")
        return f"{self.processor_class} from {self.folder} ({type(self.image_processor).__name__}){unused}"


def is_vision_row(first: Any) -> bool:
    """TRL's test (``"image" in sample or "images" in sample``) on the first row."""
    return isinstance(first, Mapping) and any(column in first for column in IMAGE_COLUMNS)


def load_processor(folder: str) -> VisionProcessor:
    """The processor of a model folder (``preprocessor_config.json`` or ``processor_config.json``, tokenizer files,
    ``chat_template.json``/``chat_template.jinja``), read offline."""
    path = Path(folder)
    config = _processor_config(path)
    processor_class = str(config.get("processor_class") or "")
    if processor_class not in EMULATED_PROCESSORS:
        raise InputError(f"{folder}: processor class {processor_class or '(none named)'!r} is not emulated for image "
                         f"rows", hint=f"mldebug expands images as {', '.join(sorted(EMULATED_PROCESSORS))} do")
    import warnings

    from transformers import AutoImageProcessor, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            image_processor = AutoImageProcessor.from_pretrained(str(path), local_files_only=True,
                                                                 trust_remote_code=False)
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"{folder}: the processor cannot be loaded ({str(exc).splitlines()[0]})") from None
    template, source = _chat_template(path, tokenizer)
    if processor_class in WRAPPING_PROCESSORS:
        return _wrapping(path, processor_class, config, image_processor, tokenizer, template, source)
    image_token = str(config.get("image_token") or REPEATING_PROCESSORS[processor_class])
    image_token_id = tokenizer.convert_tokens_to_ids(image_token)
    if not isinstance(image_token_id, int) or image_token_id == tokenizer.unk_token_id:
        raise InputError(f"{folder}: the tokenizer has no {image_token} token")
    counter = None if processor_class in QWEN_PROCESSORS else _processor(processor_class, config, image_processor,
                                                                           tokenizer, template, folder)
    return VisionProcessor(str(path), processor_class, tokenizer, image_processor, template, source, image_token,
                           image_token_id, counter)


def _wrapping(path: Path, processor_class: str, config: dict[str, Any], image_processor: Any, tokenizer: Any,
              template: str, source: str) -> VisionProcessor:
    """Gemma 3: the template's ``<start_of_image>`` becomes the processor's full image sequence."""
    folder = str(path)
    image = config.get("image_processor") if isinstance(config.get("image_processor"), dict) else config
    # transformers 5.24: Gemma3Processor's own images_kwargs default (do_pan_and_scan False) wins over the image
    # processor's setting unless the call passes it, and TRL 1.16's collator passes none: no crops (measured,
    # tests/pipelines/test_vision_wrapped.py); the context line says so
    unused = "do_pan_and_scan" if getattr(image_processor, "do_pan_and_scan", None) or (
        isinstance(image, dict) and image.get("do_pan_and_scan")) else ""
    if processor_class in TILING_PROCESSORS:
        processor = _processor(processor_class, config, image_processor, tokenizer, template, folder)
        needed = [processor.fake_image_token, processor.image_token, processor.global_image_tag, "<row_1_col_1>"]
        missing = [t for t in needed if tokenizer.convert_tokens_to_ids(t) in (None, tokenizer.unk_token_id)]
        if missing:
            raise InputError(f"{folder}: the tokenizer has no {', '.join(missing)} token ({processor_class} needs it)")
        return VisionProcessor(folder, processor_class, tokenizer, image_processor, template, source,
                               processor.image_token, processor.image_token_id, processor)
    for name in ("boi_token", "image_token", "eoi_token"):
        token = getattr(tokenizer, name, None)
        if not isinstance(token, str) or tokenizer.convert_tokens_to_ids(token) in (None, tokenizer.unk_token_id):
            raise InputError(f"{folder}: the tokenizer declares no {name} ({processor_class} needs it)")
    processor = _processor(processor_class, config, image_processor, tokenizer, template, folder)
    return VisionProcessor(folder, processor_class, tokenizer, image_processor, template, source,
                           tokenizer.image_token, tokenizer.convert_tokens_to_ids(tokenizer.image_token), processor,
                           placeholder=tokenizer.boi_token, unused_setting=unused)


def _processor(processor_class: str, config: dict[str, Any], image_processor: Any, tokenizer: Any, template: str,
               folder: str) -> Any:
    """The model's own processor class, built from its folder's settings (it counts each image's tokens)."""
    import transformers

    keys = ("patch_size", "vision_feature_select_strategy", "num_additional_image_tokens", "image_token",
            "image_seq_length", "image_seq_len")
    try:
        return getattr(transformers, processor_class)(image_processor=image_processor, tokenizer=tokenizer,
                                                      chat_template=template,
                                                      **{k: config[k] for k in keys if k in config})
    except (TypeError, ValueError, IndexError) as exc:
        raise InputError(f"{folder}: {processor_class} cannot be built from its settings ({exc})") from None


def has_processor(folder: str) -> bool:
    path = Path(folder)
    return path.is_dir() and any((path / name).is_file() for name in ("preprocessor_config.json", "processor_config.json"))


def _processor_config(path: Path) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for name in ("preprocessor_config.json", "processor_config.json"):
        file = path / name
        if file.is_file():
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InputError(f"{file}: not valid JSON ({exc})") from None
            if isinstance(data, dict):
                merged.update(data)
    if not merged:
        raise InputError(f"{path}: no preprocessor_config.json or processor_config.json (image rows need the "
                         "model's processor files)")
    return merged


def _chat_template(path: Path, tokenizer: Any) -> tuple[str, str]:
    """The processor's template: chat_template.jinja, else chat_template.json, else the tokenizer's."""
    jinja = path / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8"), str(jinja)
    file = path / "chat_template.json"
    if file.is_file():
        try:
            template = json.loads(file.read_text(encoding="utf-8")).get("chat_template")
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError) as exc:
            raise InputError(f"{file}: not a chat template file ({exc})") from None
        if isinstance(template, str):
            return template, str(file)
    if isinstance(tokenizer.chat_template, str):
        return tokenizer.chat_template, f"{path}/tokenizer_config.json"
    raise InputError(f"{path}: no chat template (chat_template.jinja, chat_template.json or the tokenizer's)")


def row_images(raw: Mapping[str, Any]) -> list[Any]:
    """The images of a row as the collator reads them: ``images`` (a list), or ``image`` as a one-image list."""
    if "image" in raw and "images" not in raw:
        return [raw["image"]]
    images = raw.get("images")
    if images is None:
        return []
    if not isinstance(images, list):
        raise RowRefused(Code.INVALID_MESSAGES, f"images is a {type(images).__name__}, not a list", "give each row a list of images")
    return images


def images_in_order(prepared: list[dict[str, Any]], column: Sequence[Any]) -> list[Any]:
    """The images the processor receives, in order: TRL fills each unfilled ``{"type": "image"}`` part (tool messages
    aside) with the next image of the column, then transformers' apply_chat_template takes from every image part the
    values of its ``image``, ``url``, ``path`` and ``base64`` keys (an inline image, or two values for one part)."""
    pending = iter(column)
    out: list[Any] = []
    for message in prepared:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") != "image":
                continue
            if "image" not in part and message.get("role") != "tool":
                filled = next(pending, None)
                if filled is not None:
                    out.append(filled)
            out += [{"bytes": part[key]} if key == "base64" else part[key]
                    for key in ("image", "url", "path", "base64") if key in part]
    return out


def prepare_messages(messages: Any, images: int) -> list[dict[str, Any]]:
    """TRL's prepare_multimodal_messages: contents as parts, the images' parts before the first user text when every
    content is a string, and the placeholder count equal to the image count."""
    if not isinstance(messages, list) or not messages:
        raise RowRefused(Code.INVALID_MESSAGES, "messages is not a non-empty list", "give each row a list of role/content messages")
    prepared, included = [], False
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise RowRefused(Code.INVALID_MESSAGES, "a message without a role", "give every message a role and content", i)
        role, content = message["role"], message.get("content")
        if role not in ROLES:
            raise RowRefused(Code.UNMAPPED_ROLE, f"role {role!r}: TRL's prepare_multimodal_messages raises ValueError (Invalid "
                             "role)", f"use one of {', '.join(ROLES)}", i)
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
            if role == "user" and not included:
                parts = [{"type": "image"} for _ in range(images)] + parts
                included = True
            message = {**message, "content": parts}
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, Mapping) or "type" not in part:
                    raise RowRefused(Code.INVALID_MESSAGES, "a content part without a type", 'write parts as {"type": "text", '
                                     '"text": ...} or {"type": "image"}', i)
        prepared.append(dict(message))
    placeholders = sum(1 for m in prepared if isinstance(m.get("content"), list) and m["role"] != "tool"
                       for part in m["content"] if part["type"] == "image" and "image" not in part)
    if placeholders != images:
        raise RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"{images} image(s) and {placeholders} image placeholder(s): TRL raises ValueError "
                         f"(Number of images provided ({images}) does not match number of image placeholders "
                         f"({placeholders}))", "give one {\"type\": \"image\"} part per image, in order")
    return prepared


def encode_row(index: int, line: int | None, raw: Any, processor: VisionProcessor, images_from: ImageReader,
               max_length: int | None) -> VisionRow:
    """The row's ids and labels as TRL's vision collator makes them (a refusal or image problems when it cannot)."""
    row = VisionRow(index, line)
    try:
        if not isinstance(raw, Mapping):
            raise RowRefused(Code.INVALID_MESSAGES, f"the row is a {type(raw).__name__}, not an object", "write one object per row")
        images = row_images(raw)
        row.messages = prepare_messages(raw.get("messages"), len(images))
    except RowRefused as refused:
        row.refused = refused
        return row
    infos: list[ImageInfo | None] = []
    for i, value in enumerate(images_in_order(row.messages, images)):
        try:
            infos.append(images_from.info(value))
        except ImageProblem as problem:
            row.image_problems.append((i, problem))
            infos.append(None)
    try:
        row.text = processor.tokenizer.apply_chat_template(row.messages, chat_template=processor.chat_template,
                                                           tokenize=False)
    except Exception as exc:  # noqa: BLE001 - jinja2 and the template's raise_exception raise anything
        row.refused = RowRefused(Code.TEMPLATE_ERROR, f"the chat template raises: {str(exc).splitlines()[0] if str(exc) else exc}",
                                 "fix the row or the template")
        return row
    row.rendered = row.text
    if row.image_problems:
        return row
    expand_images(row, [info for info in infos if info is not None], processor, max_length)
    return row


def expand_images(row: VisionRow, infos: Sequence[ImageInfo], processor: VisionProcessor, max_length: int | None,
                  special_tokens: bool = False) -> None:
    """Each placeholder replaced by its image's tokens, then the whole text tokenized once, as the processor does
    (``special_tokens``: with the tokenizer's own, as the processor's apply_chat_template asks for them when the
    rendered text does not start with the BOS token)."""
    pieces = row.text.split(processor.image_placeholder)
    if len(pieces) - 1 != len(infos):  # the template wrote more or fewer placeholders than the parts it was given
        row.refused = RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"the template wrote {len(pieces) - 1} image placeholder(s) for {len(infos)} "
                                 "image(s): the processor raises ValueError", "check the template's image parts")
        return
    sizes = []
    for i, info in enumerate(infos):
        try:
            sizes.append(processor.size_after_resize(info.height, info.width))
        except ValueError as exc:  # smart_resize: an aspect ratio over 200
            row.image_problems.append((i, ImageProblem(f"is refused by the image processor ({exc})", info.source)))
    if row.image_problems:
        return
    expansions = [processor.expansion(info.height, info.width, tokens) for info, (_, _, tokens) in zip(infos, sizes)]
    row.text = pieces[0] + "".join(expansion + piece for expansion, piece in zip(expansions, pieces[1:]))
    encoding = processor.tokenizer.backend_tokenizer.encode(row.text, add_special_tokens=special_tokens)
    ids = encoding.ids
    if processor.processor_class in WRAPPING_PROCESSORS:
        blocks = _blocks(encoding.offsets, ids, pieces, expansions, processor)
    else:
        counts = [tokens for _, _, tokens in sizes]
        blocks = list(zip(_runs(ids, processor.image_token_id, counts), counts))
    for i, (info, (resized_h, resized_w, _), (start, length)) in enumerate(zip(infos, sizes, blocks)):
        row.images.append(ImageLine(i, info.source, info.width, info.height, info.mode, resized_w, resized_h, length,
                                      start, _message_of(row.messages, i)))
    row.full_length = len(ids)
    row.text_length = len(ids) - sum(length for _, length in blocks)
    kept = ids if max_length is None else ids[:max_length]
    row.offsets = expanded_offsets(encoding.offsets[:len(kept)], pieces, expansions, processor.image_placeholder)
    row.input_ids = kept
    row.labels = list(kept)  # labels = input_ids; only padding is masked
    if processor.processor_class in TILING_PROCESSORS and row.cut_images:
        row.cut_consequence = (f"{processor.processor_class} raises TypeError (it cannot find the cut image's last "
                               "token) and the run fails")
    if len(kept) < len(ids) and (infos or processor.processor_class not in TILING_PROCESSORS) and not row.cut_images:
        # the processor counts its image token in the text and in the kept ids (Idefics3 only when given images)
        row.cut_literal = row.text.count(processor.image_token) - kept.count(processor.image_token_id)


def rendered_offsets(offsets: Sequence[tuple[int, int]], pieces: Sequence[str], tokens: Sequence[int],
                      image_token: str) -> list[tuple[int, int]]:
    """Token spans in the expanded text mapped onto the rendered text: an image's tokens all cover its placeholder."""
    return expanded_offsets(offsets, pieces, [image_token * count for count in tokens], image_token)


def expanded_offsets(offsets: Sequence[tuple[int, int]], pieces: Sequence[str], expansions: Sequence[str],
                     placeholder: str) -> list[tuple[int, int]]:
    """Token spans in the text whose placeholders were replaced by ``expansions`` mapped onto the rendered text (one
    placeholder per image): every token inside an image's expansion covers its placeholder."""
    blocks, expanded, rendered = [], 0, 0  # (expanded start, expanded end, rendered start, rendered end)
    for k, piece in enumerate(pieces[:-1]):
        expanded, rendered = expanded + len(piece), rendered + len(piece)
        blocks.append((expanded, expanded + len(expansions[k]), rendered, rendered + len(placeholder)))
        expanded, rendered = blocks[-1][1], blocks[-1][3]
    out = []
    for start, end in offsets:
        shift = 0
        for e_start, e_end, r_start, r_end in blocks:
            if start >= e_end:
                shift += (e_end - e_start) - (r_end - r_start)
            elif start >= e_start:
                out.append((r_start, r_end))
                break
            else:
                out.append((start - shift, end - shift))
                break
        else:
            out.append((start - shift, end - shift))
    return out


def _blocks(offsets: Sequence[tuple[int, int]], ids: Sequence[int], pieces: Sequence[str], expansions: Sequence[str],
            processor: VisionProcessor) -> list[tuple[int, int]]:
    """(first position, length) of each image's block, found inside its expansion's characters: its image tokens
    (Gemma 3: the wrappers and newlines around them stay text), or every token of its tiles and tags (Idefics3)."""
    whole = processor.processor_class in TILING_PROCESSORS
    out, at = [], len(pieces[0])
    for expansion, piece in zip(expansions, pieces[1:]):
        span_start, span_end = at, at + len(expansion)
        inside = [p for p, (start, end) in enumerate(offsets)
                  if span_start <= start and end <= span_end and end > start
                  and (whole or ids[p] == processor.image_token_id)]
        out.append((inside[0], inside[-1] - inside[0] + 1) if inside else (len(ids), 0))
        at = span_end + len(piece)
    return out


def _runs(ids: Sequence[int], token: int, lengths: Sequence[int]) -> list[int]:
    """Where each image's tokens start: the image-token positions taken in order, ``lengths[k]`` for image k."""
    positions = [p for p, t in enumerate(ids) if t == token]
    starts, used = [], 0
    for length in lengths:
        starts.append(positions[used] if used < len(positions) else len(ids))
        used += length
    return starts


def _message_of(messages: Sequence[Mapping[str, Any]], image: int) -> int | None:
    """The message holding the row's ``image``-th image part."""
    seen = 0
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and message.get("role") != "tool":
            for part in content:
                if isinstance(part, Mapping) and part.get("type") == "image":
                    if seen == image:
                        return i
                    seen += 1
    return None


def trained_image_tokens(row: VisionRow, image_token_id: int) -> int:
    return sum(1 for label in row.labels if label == image_token_id and label != IGNORE_INDEX)


# --- inspect-data's vision path (Framework.vision) ------------------------------------------------------------

def vision_path(options: Any, processor: VisionProcessor, base: Path) -> VisionPath:
    """inspect-data's vision path for TRL's SFT collator."""
    _refuse_settings(options)
    images = ImageReader(base)
    max_length = options.max_length if options.max_length is not None else DEFAULT_MAX_LENGTH
    return VisionPath(
        lambda record: record_row(record, encode_row, processor, images, max_length), max_length, assistant_header(processor),
        {"format": "messages with images (TRL vision SFT: images column, image content parts)",
         "chat_template": processor.template_source,
         "framework": f"TRL {EMULATED_TRL} DataCollatorForVisionLanguageModeling: max_length "
                      f"{max_length if max_length is not None else 'None'}, the first tokens kept, no row dropped, "
                      "labels = input ids (image tokens included)",
         "train_on": "all"})


def read_infos(row: VisionRow, images: Sequence[Any], images_from: ImageReader) -> list[ImageInfo]:
    """Each readable image's size and mode, in order; a problem with one is recorded on the row (its index, what is
    wrong), and the caller reports the row without encoding it."""
    infos: list[ImageInfo] = []
    for i, value in enumerate(images):
        try:
            infos.append(images_from.info(value))
        except ImageProblem as problem:
            row.image_problems.append((i, problem))
    return infos


def _refuse_settings(options: Any) -> None:
    """What TRL's SFTTrainer raises for a vision dataset with these settings."""
    own = getattr(options, "framework_options", None)
    if getattr(own, "packing", False):
        raise UsageError("TRL's SFTTrainer raises ValueError on image rows with packing: \"Packing is not supported "
                         "for vision datasets\"", hint="set packing: false")
    if getattr(own, "padding_free", False):
        raise UsageError("TRL's SFTTrainer raises ValueError on image rows with padding_free", hint="set padding_free: false")
    if options.truncation_mode == "keep_end":
        raise UsageError("TRL's SFTTrainer raises ValueError on image rows with truncation_mode keep_end",
                         hint="use keep_start (the default) or max_length: null")
    if options.train_on not in (None, "all"):
        raise UsageError(f"--train-on {options.train_on} on image rows is not emulated: mldebug emulates TRL's vision "
                         "collator with every token trained (its default)", hint="leave --train-on unset")


def record_row(record: Record, encode: Callable[..., VisionRow], processor: VisionProcessor, images: ImageReader,
               max_length: int | None) -> VisionRow:
    """A dataset record's row by ``encode`` (``encode_row``; a DPO pair's ``encode_pair``); a line that could not be
    read is refused as it is."""
    if record.error is not None:
        row = VisionRow(record.index, record.line)
        row.refused = RowRefused(Code.INVALID_MESSAGES, record.error, "fix the line")
        return row
    return encode(record.index, record.line, record.data, processor, images, max_length)


def assistant_header(processor: VisionProcessor) -> str:
    """What the template writes between a user turn and the assistant's words, after its last special token."""
    probe = [{"role": "user", "content": [{"type": "text", "text": "\x00U"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "\x00A"}]}]
    try:
        text = processor.tokenizer.apply_chat_template(probe, chat_template=processor.chat_template, tokenize=False)
    except Exception:  # noqa: BLE001 - a template that cannot render the probe has no header to look for
        return ""
    start, end = text.find("\x00U"), text.find("\x00A")
    if start < 0 or end < start:
        return ""
    return header_after_specials(text[start + 2:end], processor)


def header_after_specials(header: str, processor: VisionProcessor) -> str:
    """The header's text after its last special token (what a text search for the assistant span matches)."""
    specials = [t for t in processor.tokenizer.all_special_tokens + list(processor.tokenizer.get_added_vocab()) if t]
    cut = max((header.rfind(s) + len(s) for s in specials if s in header), default=0)
    return header[cut:]
