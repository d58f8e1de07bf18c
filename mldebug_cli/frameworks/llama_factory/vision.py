"""LLaMA-Factory's multimodal rows (``mllm``): an ``images`` list and ``<image>`` placeholders in the text, expanded by
the template's ``mm_plugin``, then encoded by the supervised processor like any chat row.

What LLaMA-Factory 0.9.5 does (``data/converter.py``, ``data/mm_plugin.py`` Qwen2VLPlugin,
``data/processor/supervised.py``), checked row for row against it (tests/goldens/llama_factory.py):

- The converter drops a row whose roles are out of order or whose turn count is odd, before any image is looked at.
  String image paths are joined to ``media_dir`` (the dataset's folder unless set) when that file exists, else used
  as written (relative to the run's working directory).
- ``process_messages`` counts ``<image>``, ``<video>`` and ``<audio>`` in the turns (not in the system text, which is
  left as written) and raises ValueError when a count differs from the row's images (videos, audios): "The number of
  images does not match the number of <image> tokens". The run stops there.
- Each image is opened, shrunk (by ``sqrt(image_max_pixels / area)``, default 768x768) or grown (``image_min_pixels``,
  default 32x32) with ``int()`` sides, its short side raised to 28 and a side over 200 times the other cut to 180
  times it (Qwen2VLPlugin._preprocess_image); the model's image processor then resizes it (``smart_resize``: patch and
  merge sizes, min/max pixels) and each ``<image>`` becomes ``<|vision_start|>`` + one ``<|image_pad|>`` per merged
  patch + ``<|vision_end|>``, in order.
- The supervised processor encodes the pairs, masks the prompts (image tokens in a prompt are not trained; in a
  reply they are) and cuts each pair to its share of ``cutoff_len`` (infer_seqlen): a cut inside an image's tokens is
  not caught there; the model's forward raises ("Image features and image tokens do not match") at its first batch.

Emulated plugins: ``qwen2_vl`` (templates qwen2_vl, and the others LLaMA-Factory builds with that plugin are refused
by name until their own goldens exist).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.registry import Code
from mldebug_cli.core.sections.rows import ImageLine
from mldebug_cli.frameworks.framework import VisionPath
from mldebug_cli.frameworks.llama_factory.data import SHAREGPT_TAGS, InvalidRow, LfMessage, lf_messages, supervise
from mldebug_cli.frameworks.llama_factory.templates import VERSION
from mldebug_cli.frameworks.trl.vision import (
    QWEN_PROCESSORS,
    RowRefused,
    VisionProcessor,
    VisionRow,
    header_after_specials,
    read_infos,
    rendered_offsets,
)
from mldebug_cli.sources.dataset import Record
from mldebug_cli.sources.images import ImageInfo, ImageProblem, ImageReader

if TYPE_CHECKING:
    from mldebug_cli.frameworks.llama_factory.data import Piece

IMAGE_PLACEHOLDER, VIDEO_PLACEHOLDER, AUDIO_PLACEHOLDER = "<image>", "<video>", "<audio>"
VISION_BOS, VISION_EOS = "<|vision_start|>", "<|vision_end|>"
# templates whose mm_plugin mldebug emulates -> the plugin's name
EMULATED_PLUGINS = {"qwen2_vl": "qwen2_vl"}
DEFAULT_MAX_PIXELS, DEFAULT_MIN_PIXELS = 768 * 768, 32 * 32
IMAGE_COLUMNS = ("images",)
FORWARD_FAILS = ("LLaMA-Factory keeps the row; the model's forward raises ValueError (Image features and image tokens "
                 "do not match) at its first batch")


@dataclass(frozen=True)
class Pixels:
    """ModelArguments image_max_pixels / image_min_pixels (LLaMA-Factory's defaults otherwise)."""

    max_pixels: int = DEFAULT_MAX_PIXELS
    min_pixels: int = DEFAULT_MIN_PIXELS


def regularized_size(width: int, height: int, pixels: Pixels) -> tuple[int, int]:
    """The size Qwen2VLPlugin._preprocess_image gives an image before the image processor sees it; ValueError where
    Pillow's resize would raise (a side of 0)."""
    if width * height > pixels.max_pixels:
        factor = math.sqrt(pixels.max_pixels / (width * height))
        width, height = _resized(int(width * factor), int(height * factor))
    if width * height < pixels.min_pixels:
        factor = math.sqrt(pixels.min_pixels / (width * height))
        width, height = _resized(int(width * factor), int(height * factor))
    if min(width, height) < 28:
        width, height = max(width, 28), max(height, 28)
    if width / height > 200:
        width, height = height * 180, height
    if height / width > 200:
        width, height = width, width * 180
    return width, height


def _resized(width: int, height: int) -> tuple[int, int]:
    if width <= 0 or height <= 0:
        raise ValueError(f"LLaMA-Factory resizes it to {width}x{height}: Pillow raises (height and width must be > 0)")
    return width, height


def is_mllm_row(first: Any) -> bool:
    """A LLaMA-Factory row with images: an ``images`` column (the column dataset_info.json names by default)."""
    return isinstance(first, Mapping) and any(column in first for column in IMAGE_COLUMNS)


def _chat(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The row's messages as role/content (``messages`` with role/content, or ``conversations`` with from/value as
    ShareGPT writes them); an alpaca row (instruction/input/output) becomes one user and one assistant turn."""
    if "messages" in raw or "conversations" in raw:
        turns = raw.get("messages", raw.get("conversations"))
        if not isinstance(turns, list):
            raise RowRefused(Code.INVALID_MESSAGES, "messages is not a list", "give each row a list of role/content messages")
        out = []
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping):
                raise RowRefused(Code.INVALID_MESSAGES, f"message {i} is not an object", "write messages as role/content objects", i)
            role = turn.get("role", turn.get("from"))
            content = turn.get("content", turn.get("value"))
            if isinstance(content, list):
                raise RowRefused(Code.INVALID_MESSAGES, f"message {i}'s content is a list of parts: LLaMA-Factory's template "
                                 "formatters take strings only and its run stops here",
                                 "write each content as one string with <image> where each image goes", i)
            if not isinstance(content, str):
                raise RowRefused(Code.INVALID_MESSAGES, f"message {i}'s content is {type(content).__name__}, not text: "
                                 "LLaMA-Factory's mm_plugin raises on it", "give every message a string content", i)
            mapped = role if role in ("system", "user", "assistant") else SHAREGPT_TAGS.get(str(role), str(role))
            out.append({"role": "tool" if mapped == "observation" else mapped, "content": content})
        return out
    if "instruction" in raw:
        prompt = "\n".join(str(raw[k]) for k in ("instruction", "input") if raw.get(k))
        chat = [{"role": "system", "content": str(raw["system"])}] if raw.get("system") else []
        return [*chat, {"role": "user", "content": prompt}, {"role": "assistant", "content": str(raw.get("output", ""))}]
    raise RowRefused(Code.INVALID_MESSAGES, "the row has neither messages/conversations nor instruction/output",
                     "write LLaMA-Factory's sharegpt or alpaca rows")


def _images(raw: Mapping[str, Any]) -> list[Any]:
    images = raw.get("images")
    if images is None:
        return []
    return images if isinstance(images, list) else [images]


def encode_row(index: int, line: int | None, raw: Any, processor: VisionProcessor, rows: Any, images_from: ImageReader,
               pixels: Pixels) -> VisionRow:
    """The row's ids and labels as LLaMA-Factory's converter, mm_plugin and supervised processor make them (a drop, a
    refusal or image problems when they do not). ``rows`` is the framework's Rows profile (template, encoder, settings)."""
    row = VisionRow(index, line)
    try:
        if not isinstance(raw, Mapping):
            raise RowRefused(Code.INVALID_MESSAGES, f"the row is a {type(raw).__name__}, not an object", "write one object per row")
        chat = _chat(raw)
        row.messages = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in chat]
        try:
            system, turns = lf_messages(chat)
        except InvalidRow as dropped:
            row.dropped = str(dropped)
            return row
        images = _images(raw)
        _validate(turns, len(images))
    except RowRefused as refused:
        row.refused = refused
        return row
    infos = read_infos(row, images, images_from)
    if row.image_problems:
        return row
    sizes = []
    for i, info in enumerate(infos):
        try:
            width, height = regularized_size(info.width, info.height, pixels)
            sizes.append(processor.size_after_resize(height, width))
        except ValueError as exc:
            row.image_problems.append((i, ImageProblem(f"is refused ({exc})", info.source)))
    if row.image_problems:
        return row
    counts = [tokens for _, _, tokens in sizes]
    expanded, owners = _expand(turns, counts, processor.image_token)
    try:
        pairs = rows.encoder.pairs(system, expanded, None)
    except (ValueError, KeyError, TypeError) as exc:
        row.refused = RowRefused(Code.TEMPLATE_ERROR, f"LLaMA-Factory's template raises on this row ({type(exc).__name__}: {exc})",
                                 "fix the row")
        return row
    result = supervise(pairs, rows.options, rows.template, rows.tokenizer.eos_token_id)
    row.text = result.text
    row.input_ids, row.labels = result.input_ids, result.labels
    row.full_length = result.full_length
    row.text_length = result.full_length - sum(counts)
    _place_images(row, pairs, result.kept, infos, sizes, owners, processor.image_token_id)
    row.rendered, row.offsets = _collapse(result.text, result.offsets, counts, processor.image_token)
    row.cut_consequence = FORWARD_FAILS
    return row


def _validate(turns: Sequence[LfMessage], images: int) -> None:
    """_validate_messages: each placeholder counted in the turns (the system text is not looked at)."""
    for placeholder, kind, given in ((IMAGE_PLACEHOLDER, "images", images), (VIDEO_PLACEHOLDER, "videos", 0),
                                     (AUDIO_PLACEHOLDER, "audios", 0)):
        found = sum(turn.content.count(placeholder) for turn in turns)
        if found != given:
            first = next((t.index for t in turns if placeholder in t.content), None)
            raise RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"{given} {kind} and {found} {placeholder} placeholder(s) in the turns: "
                             f"LLaMA-Factory raises ValueError (The number of {kind} does not match the number of "
                             f"{placeholder} tokens) and its run stops",
                             f"write one {placeholder} per item of the row's {kind} list, in the user turns "
                             "(a placeholder in the system text is not counted)", first)


def _expand(turns: Sequence[LfMessage], counts: Sequence[int], image_token: str) -> tuple[list[LfMessage], list[int]]:
    """Each ``<image>`` replaced, in order, by its image's tokens; also which turn holds each image."""
    out, owners, k = [], [], 0
    for position, turn in enumerate(turns):
        content = turn.content
        while IMAGE_PLACEHOLDER in content:
            content = content.replace(IMAGE_PLACEHOLDER, VISION_BOS + image_token * counts[k] + VISION_EOS, 1)
            owners.append(position)
            k += 1
        out.append(LfMessage(turn.role, content, turn.index, turn.calls))
    return out, owners


def _place_images(row: VisionRow, pairs: Sequence[tuple[Piece, Piece]], kept: Sequence[tuple[int, int]],
                  infos: Sequence[ImageInfo], sizes: Sequence[tuple[int, int, int]], owners: Sequence[int],
                  image_token_id: int) -> None:
    """Where each image's tokens are in the kept ids, and how many of them the cut kept. The image tokens of a piece
    are taken in order (a literal image token in the text would take an image's place, as the model does)."""
    positions: list[int | None] = []  # every image-token occurrence of the full row: its kept position, or None
    at = 0
    for (source, target), (source_len, target_len) in zip(pairs, kept):
        for piece, length in ((source, source_len), (target, target_len)):
            positions += [at + p if p < length else None for p, t in enumerate(piece.ids) if t == image_token_id]
            at += length
    used = 0
    for i, (info, (resized_h, resized_w, tokens)) in enumerate(zip(infos, sizes)):
        mine = positions[used:used + tokens]
        used += tokens
        kept_at = [p for p in mine if p is not None]
        start = kept_at[0] if kept_at else len(row.input_ids)
        message = row_message_index(row, owners[i])
        row.images.append(ImageLine(i, info.source, info.width, info.height, info.mode, resized_w, resized_h, tokens,
                                      start, message))
        row.kept_image_tokens[i] = len(kept_at)
    if len(positions) != used:
        row.refused = RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"the text holds {len(positions) - used} image token(s) written literally "
                                 "beside its images' own: the model's forward raises (Image features and image tokens "
                                 "do not match)", "remove the literal image tokens from the text")


def row_message_index(row: VisionRow, turn: int) -> int | None:
    """The row's message index of the ``turn``-th turn (after a leading system message)."""
    offset = 1 if row.messages and row.messages[0]["role"] == "system" else 0
    index = turn + offset
    return index if index < len(row.messages) else None


def _collapse(text: str, offsets: Sequence[tuple[int, int]], counts: Sequence[int],
              image_token: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with each image's run of tokens written once, and the token spans mapped onto it."""
    pieces, rest = [], text
    for count in counts:
        run = VISION_BOS + image_token * count + VISION_EOS
        head, _, rest = rest.partition(run)
        pieces.append(head + VISION_BOS)
        rest = VISION_EOS + rest
    pieces.append(rest)
    return image_token.join(pieces), rendered_offsets(offsets, pieces, counts, image_token)


# --- inspect-data's vision path (Framework.vision) ------------------------------------------------------------

def vision_path(options: Any, processor: VisionProcessor, base: Path, own: Any,
                row_profile: Callable[[Any, Any, str], Any]) -> VisionPath:
    """LLaMA-Factory's converter, its template's mm_plugin and the supervised processor (frameworks/llama_factory):
    ``own`` is the config's LlamaFactoryOptions (None without --config), ``row_profile`` its text rows' encoding
    (framework.py's Rows); both are passed in, as framework.py imports this module."""
    name = getattr(options, "template", None) or (own.template if own else None)
    if name not in EMULATED_PLUGINS:
        what = f"template {name!r}" if name else "no template (LLaMA-Factory parses the tokenizer's, with no mm_plugin)"
        raise UsageError(f"the rows have images and LLaMA-Factory's {what}: mldebug emulates the mm_plugin of "
                         f"{', '.join(sorted(EMULATED_PLUGINS))} only (a template without one makes "
                         "LLaMA-Factory raise 'This model does not support image input')",
                         hint="set template: qwen2_vl for a Qwen2-VL/Qwen2.5-VL model")
    if processor.processor_class not in QWEN_PROCESSORS:
        raise UsageError(f"the rows have images and the model's processor is {processor.processor_class}: mldebug "
                         f"emulates LLaMA-Factory's qwen2_vl plugin with {', '.join(sorted(QWEN_PROCESSORS))} only",
                         hint="check LLaMA-Factory image rows with a Qwen2-VL/Qwen2.5-VL processor folder")
    if own and own.packing:
        raise UsageError(f"{', '.join(own.packing)} on image rows is not emulated: LLaMA-Factory packs rows with "
                         "their images into cutoff_len blocks", hint="check with packing off")
    loaded = SimpleNamespace(tokenizer=processor.tokenizer, chat_template=processor.chat_template)
    rows = row_profile(options, loaded, "chat")
    settings = rows.options
    pixels = Pixels(getattr(settings, "image_max_pixels", DEFAULT_MAX_PIXELS),
                              getattr(settings, "image_min_pixels", DEFAULT_MIN_PIXELS))
    media = getattr(settings, "media_dir", None)
    if media and settings.config_path and not Path(media).is_absolute():
        media = str(Path(settings.config_path).parent / media)
    images = ImageReader(Path(media) if media else base)

    def encode(record: Record) -> VisionRow:
        if record.error is not None:
            row = VisionRow(record.index, record.line)
            row.refused = RowRefused(Code.INVALID_MESSAGES, record.error, "fix the line")
            return row
        return encode_row(record.index, record.line, record.data, processor, rows, images, pixels)

    user = rows.template.user[0] if rows.template.user and isinstance(rows.template.user[0], str) else ""
    return VisionPath(
        encode, settings.cutoff_len, header_after_specials(user.partition("{{content}}")[2], processor),
        {"format": "LLaMA-Factory mllm rows (messages with <image> placeholders, an images list)",
         "chat_template": f"LLaMA-Factory's template {rows.template.name!r} (mm_plugin "
                          f"{EMULATED_PLUGINS[rows.template.name]}; the tokenizer's is not used)",
         "framework": f"llama-factory {VERSION} supervised processor: <image> expanded by the mm_plugin (images "
                      f"shrunk to image_max_pixels {pixels.max_pixels:,}, grown to image_min_pixels "
                      f"{pixels.min_pixels:,}), pairs cut to their share of cutoff_len {settings.cutoff_len}, "
                      f"{rows._masking()}",
         "train_on": rows.train_on(None, "chat")})
