"""axolotl's multimodal rows: how axolotl 0.19.0's MultiModalChatDataCollator turns a row with images into ids and
labels (a config with ``processor_type``; the rows are not tokenized ahead, ``skip_prepare_dataset``).

What axolotl does (``processing_strategies.py`` ProcessingStrategy and its subclasses, ``utils/collators/mm_chat.py``,
``core/builders/causal.py``), checked row for row against it (tests/frameworks/test_axolotl_vision_goldens.py):

- The conversation is the configured ``field_messages``, else ``messages``, else ShareGPT ``conversations``
  (``from``/``value``, human and gpt mapped to user and assistant); neither raises ValueError. A string content
  becomes one text part, a list of parts is kept, and a message whose content is neither is left out.
- Images: of the ``images`` column (else ``image``) only the FIRST is used (axolotl logs a warning and drops the
  others); it is loaded from its path (relative to the working directory), and put into the last message holding a
  bare ``{"type": "image"}`` part (its first such part), else appended after the text of the first user message.
  Image parts that carry ``image``, ``url``, ``path`` or ``base64`` are loaded by transformers as they are.
- The processor renders the conversation with the chat template the config names (``chat_template: qwen2_vl`` ...:
  axolotl's own template; unset or ``tokenizer_default``: the tokenizer's, which for Qwen2-VL is a text-only
  template that raises on content parts), expands each image (as in TRL's path, frameworks/trl/vision.py) and
  tokenizes with the tokenizer's special tokens unless the text starts with its BOS token. Nothing is cut: the
  collator passes no max_length. A bare image part with no image stays one literal placeholder token: axolotl
  trains the row and the model's forward raises at its first batch.
- Labels: the strategy's role boundaries (``qwen2_vl``: ``<|im_start|>{role}\\n`` ... ``<|im_end|>``; ``gemma3``:
  ``<start_of_turn>model\\n`` / ``<start_of_turn>user\\n`` ... ``<end_of_turn>``) keep the content of the turns whose
  role is in ``roles_to_train`` (default assistant) and their end marker per ``train_on_eos`` (turn, all, none,
  last); ``train_on_inputs`` keeps everything. The other templates (llava, none) have no boundaries: every token is
  trained. Then the pad token and the image token (Gemma 3: ``<start_of_image>`` and ``<image_soft_token>``) are
  masked wherever they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import UsageError, in_one_line
from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.framework import VisionPath
from mldebug_cli.frameworks.trl.vision import (
    RowRefused,
    VisionProcessor,
    VisionRow,
    assistant_header,
    expand_images,
    read_infos,
)
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.dataset import Record
from mldebug_cli.sources.images import ImageProblem, ImageReader

EMULATED_AXOLOTL = "0.19.0"
IMAGE_KEYS = ("image", "url", "path", "base64")  # an image part with one of these carries its image
LEGACY_ROLES = {"human": "user", "gpt": "assistant"}
TERMINATORS = ("turn", "all", "none", "last")
# chat_template names whose processing strategy declares role boundaries: (external role, marker role) pairs, the
# start marker written with the role, and the end marker
BOUNDARIES = {
    "qwen2_vl": ((("system", "system"), ("user", "user"), ("assistant", "assistant")), "<|im_start|>{}\n", "<|im_end|>"),
    "gemma3": ((("assistant", "model"), ("user", "user")), "<start_of_turn>{}\n", "<end_of_turn>"),
}
# chat_template names with a strategy of their own that mldebug does not emulate
OWN_STRATEGIES = ("qwen3_5", "gemma3n", "gemma4", "gemma4_unified", "llama3_2_vision", "llama4", "pixtral",
                  "mistral_v7_tekken")
GEMMA_SOFT_TOKEN, GEMMA_SOFT_ID = "<image_soft_token>", 262144  # Gemma3ProcessingStrategy's fallback id
# processor classes checked against axolotl's own collator (Idefics3's image processor needs torchvision at the
# transformers axolotl pins, 5.16.1, so its rows could not be run there)
CHECKED_PROCESSORS = frozenset({"Qwen2VLProcessor", "Qwen2_5_VLProcessor", "Gemma3Processor", "LlavaProcessor"})
FORWARD_FAILS = ("axolotl trains the row; the model's forward raises ValueError (Image features and image tokens do "
                 "not match) at its first batch")


@dataclass(frozen=True)
class Boundary:
    """One role's span markers, as token ids."""

    role: str
    start: tuple[int, ...]
    end: tuple[int, ...]


@dataclass(frozen=True)
class MultimodalSettings:
    """What the config's multimodal collator is built from (axolotl's defaults)."""

    chat_template_type: str | None = None  # the config's chat_template name (None: unset)
    template: str | None = None  # the template text it resolves to (None: the tokenizer's, else the processor's)
    train_on_inputs: bool = False
    roles_to_train: tuple[str, ...] = ("assistant",)
    train_on_eos: str = "turn"
    field_messages: str | None = None
    config_folder: str | None = None  # where a relative image path is looked for when the working directory lacks it


class WorkingDirectoryImages(ImageReader):
    """load_image's reading: a relative path from the working directory; mldebug also tries the config's folder, as it
    does for the config's own paths (sources/training_plan.resolve)."""

    def __init__(self, beside: Path | None) -> None:
        super().__init__(Path.cwd())
        self.beside = beside

    def info(self, value: Any) -> Any:
        if isinstance(value, str) and self.beside is not None and not value.startswith("data:"):
            path = Path(value)
            if not path.is_absolute() and not (self.base / path).exists() and (self.beside / path).exists():
                value = str(self.beside / path)
        return super().info(value)


@dataclass(frozen=True)
class Strategy:
    """The processing strategy's masking: role boundaries (none: every token kept) and the ids always masked."""

    name: str
    boundaries: tuple[Boundary, ...]
    masked: frozenset[int]

    def labels(self, ids: Sequence[int], settings: MultimodalSettings) -> list[int]:
        if settings.train_on_inputs or not self.boundaries:
            keep = [True] * len(ids)
        else:
            keep = role_keep(ids, self.boundaries, set(settings.roles_to_train), settings.train_on_eos)
        return [t if k and t not in self.masked else IGNORE_INDEX for t, k in zip(ids, keep)]


def strategy(name: str | None, processor: VisionProcessor) -> Strategy:
    """get_processing_strategy for the emulated processors: by the config's chat_template name, else the base one."""
    tokenizer = processor.tokenizer

    def encode(text: str) -> tuple[int, ...]:
        return tuple(tokenizer.backend_tokenizer.encode(text, add_special_tokens=False).ids)

    masked = set()
    if tokenizer.pad_token_id is not None:
        masked.add(tokenizer.pad_token_id)
    boundaries: tuple[Boundary, ...] = ()
    if name in BOUNDARIES:
        roles, start, end = BOUNDARIES[name]
        end_ids = encode(end)
        boundaries = tuple(Boundary(role, encode(start.format(marker)), end_ids) for role, marker in roles
                           if end_ids and encode(start.format(marker)))
    base_token = getattr(processor.processor, "image_token", None) or processor.image_token
    if name == "qwen2_vl":
        masked.add(tokenizer.convert_tokens_to_ids("<|image_pad|>"))
    elif name == "gemma3":
        boi = getattr(tokenizer, "boi_token", None)
        masked.add(tokenizer.convert_tokens_to_ids(boi if boi is not None else base_token))
        soft = tokenizer.convert_tokens_to_ids(GEMMA_SOFT_TOKEN)
        masked.add(soft if soft is not None and soft != tokenizer.unk_token_id else GEMMA_SOFT_ID)
    else:
        masked.add(tokenizer.convert_tokens_to_ids(base_token))
    return Strategy(name or "base", boundaries, frozenset(t for t in masked if isinstance(t, int)))


def role_keep(ids: Sequence[int], boundaries: Sequence[Boundary], roles: set[str], train_on_eos: str) -> list[bool]:
    """The tokens the role scan keeps: left to right, the longest start marker at a position (the first declared among
    equals) opens a span that runs to its end marker (or the row's end); a trained role keeps its content and, per
    ``train_on_eos``, its end marker; the scan resumes after the span."""
    keep = [False] * len(ids)
    n, j = len(ids), 0
    last_end: tuple[int, int] | None = None
    ordered = sorted(boundaries, key=lambda b: -len(b.start))  # stable: the first declared wins a tie

    def at(position: int, marker: tuple[int, ...]) -> bool:
        return bool(marker) and tuple(ids[position:position + len(marker)]) == marker

    while j < n:
        match = next((b for b in ordered if at(j, b.start)), None)
        if match is None:
            j += 1
            continue
        content = j + len(match.start)
        end_at = next((k for k in range(content, n) if at(k, match.end)), None) if match.end else None
        stop = n if end_at is None else end_at + len(match.end)
        content_end = stop if end_at is None else end_at
        if match.role in roles:
            keep[content:content_end] = [True] * (content_end - content)
            if end_at is not None and train_on_eos in ("turn", "all"):
                keep[content_end:stop] = [True] * (stop - content_end)
            if end_at is not None and train_on_eos == "last":
                last_end = (content_end, stop)
        elif end_at is not None and train_on_eos == "all":
            keep[content_end:stop] = [True] * (stop - content_end)
        j = stop
    if last_end is not None:
        keep[last_end[0]:last_end[1]] = [True] * (last_end[1] - last_end[0])
    return keep


def prepare(raw: Mapping[str, Any], field_messages: str | None) -> tuple[list[dict[str, Any]], Any, int]:
    """ProcessingStrategy.__call__: (the messages as parts, the column's first image or None, the column's images
    axolotl leaves unused)."""
    messages = _conversation(raw, field_messages)
    prepared = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message or "content" not in message:
            raise RowRefused(Code.INVALID_MESSAGES, f"message {i} has no role or content: axolotl raises KeyError",
                             "give every message a role and a content", i)
        content = message["content"]
        if isinstance(content, str):
            prepared.append({"role": message["role"], "content": [{"type": "text", "text": content}]})
        elif isinstance(content, list):
            prepared.append({"role": message["role"], "content": list(content)})
    column = next((key for key in ("images", "image") if key in raw), None)
    value = raw[column] if column is not None else None
    if value is None:
        return _without_none(prepared), None, 0
    if not isinstance(value, (list, str)) or not value:
        raise RowRefused(Code.IMAGE_UNREADABLE, f"{column} is {_kind(value)}: axolotl takes {column}[0] and raises",
                         f"give {column} as a list of image paths")
    first = value[0]
    if isinstance(value, str):
        raise RowRefused(Code.IMAGE_UNREADABLE, f"{column} is a string: axolotl takes its first character "
                         f"({first!r}) as the image and load_image raises", f"give {column} as a list: [{value!r}]")
    _place(prepared, first)
    return _without_none(prepared), first, len(value) - 1


def _kind(value: Any) -> str:
    return "empty" if value in ([], "") else f"a {type(value).__name__}"


def _conversation(raw: Mapping[str, Any], field_messages: str | None) -> list[Any]:
    """The configured field (else ``messages``) moved to ``messages``, or to ``conversations`` when its first turn has
    from/value; then ``messages`` when not null, else the ShareGPT ``conversations`` converted."""
    example = dict(raw)
    field = field_messages if field_messages and example.get(field_messages) is not None else None
    field = field or ("messages" if example.get("messages") is not None else None)
    if field and field not in ("messages", "conversations"):
        moved = example.pop(field)
        target = "conversations" if _legacy(moved) else "messages"
        example[target] = moved
        if target == "conversations":
            example.pop("messages", None)
    if example.get("messages") is not None:
        if not isinstance(example["messages"], list):
            raise RowRefused(Code.INVALID_MESSAGES, "messages is not a list", "give each row a list of messages")
        return example["messages"]
    turns = example.get("conversations")
    if turns is None:
        raise RowRefused(Code.INVALID_MESSAGES, "the row has no messages or conversations: axolotl raises",
                         "give each row a messages (or conversations) list")
    if not isinstance(turns, list):
        raise RowRefused(Code.INVALID_MESSAGES, "conversations is not a list", "give each row a list of turns")
    out = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or "from" not in turn or "value" not in turn:
            raise RowRefused(Code.INVALID_MESSAGES, f"turn {i} has no from or value: axolotl raises KeyError",
                             "write ShareGPT turns as from/value", i)
        out.append({"role": LEGACY_ROLES.get(turn["from"], turn["from"]), "content": turn["value"]})
    return out


def _legacy(messages: Any) -> bool:
    return (isinstance(messages, list) and bool(messages) and isinstance(messages[0], Mapping)
            and "from" in messages[0] and "value" in messages[0])


def _place(prepared: list[dict[str, Any]], image: Any) -> None:
    """The image into the first bare image part of the last message holding one, else after the first user
    message's text (the first message's, with no user message)."""
    target = None
    for m, message in enumerate(prepared):
        for p, part in enumerate(message["content"]):
            if not isinstance(part, Mapping) or "type" not in part:
                raise RowRefused(Code.INVALID_MESSAGES, "a content part without a type: axolotl raises on it",
                                 'write parts as {"type": "text", "text": ...} or {"type": "image"}', m)
            if part["type"] == "image" and not any(key in part for key in IMAGE_KEYS):
                target = (m, p)
                break
    if target is not None:
        m, p = target
        prepared[m]["content"][p] = {**prepared[m]["content"][p], "image": image}
        return
    if not prepared:
        raise RowRefused(Code.INVALID_MESSAGES, "the row has no message to hold its image: axolotl raises IndexError",
                         "give the row a user message")
    user = next((m for m, message in enumerate(prepared) if message["role"] == "user"), 0)
    prepared[user]["content"].append({"type": "image", "image": image})


def _without_none(value: Any) -> Any:
    """remove_none_values: keys holding null dropped, at every depth."""
    if isinstance(value, Mapping):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def images_given(prepared: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The images transformers' apply_chat_template hands the processor: every image part's image/url/path/base64."""
    return [{"bytes": part[key]} if key == "base64" else part[key]
            for message in prepared for part in message["content"] if part.get("type") == "image"
            for key in IMAGE_KEYS if key in part]


def encode_row(index: int, line: int | None, raw: Any, processor: VisionProcessor, settings: MultimodalSettings,
               masking: Strategy, images_from: ImageReader) -> VisionRow:
    """The row's ids and labels as axolotl's multimodal collator makes them (a refusal or image problems when it
    cannot)."""
    row = VisionRow(index, line)
    try:
        if not isinstance(raw, Mapping):
            raise RowRefused(Code.INVALID_MESSAGES, f"the row is a {type(raw).__name__}, not an object", "write one object per row")
        row.messages, _, row.unused_images = prepare(raw, settings.field_messages)
    except RowRefused as refused:
        row.refused = refused
        return row
    infos = read_infos(row, images_given(row.messages), images_from)
    if row.image_problems:
        return row
    template = settings.template or processor.tokenizer.chat_template or processor.chat_template
    try:
        row.text = processor.tokenizer.apply_chat_template(row.messages, chat_template=template, tokenize=False)
    except Exception as exc:  # noqa: BLE001 - jinja2 and the template's raise_exception raise anything
        words = in_one_line(exc, 160)
        row.refused = RowRefused(Code.TEMPLATE_ERROR, f"the chat template raises: {type(exc).__name__}: {words}",
                                 "set chat_template to a template that renders content parts (axolotl's named one for "
                                 "the model)")
        return row
    row.rendered = row.text
    placeholders = row.text.count(processor.image_placeholder)
    if placeholders and not infos:
        row.refused = RowRefused(Code.IMAGE_PLACEHOLDER_MISMATCH, f"{placeholders} image placeholder(s) and no image: "
                                 f"{FORWARD_FAILS}", 'give the row its image, or drop the {"type": "image"} part')
        return row
    for i, info in enumerate(infos):  # the image processor runs before the placeholders are counted
        try:
            processor.size_after_resize(info.height, info.width)
        except ValueError as exc:  # smart_resize: an aspect ratio over 200
            row.image_problems.append((i, ImageProblem(f"is refused by the image processor ({exc})", info.source)))
    if row.image_problems:
        return row
    bos = processor.tokenizer.bos_token
    expand_images(row, infos, processor, None, special_tokens=not (bos is not None and row.text.startswith(bos)))
    if row.refused is not None or row.image_problems:
        return row
    row.labels = masking.labels(row.input_ids, settings)
    return row


# --- inspect-data's vision path (Framework.vision) ------------------------------------------------------------

def vision_path(options: Any, processor: VisionProcessor, base: Path, settings: MultimodalSettings,
                refusal: str | None) -> VisionPath:
    """inspect-data's vision path for axolotl's multimodal collator (``refusal``: a config setting that axolotl's
    multimodal path refuses or mldebug does not emulate)."""
    if refusal:
        raise UsageError(refusal, hint="check the config's multimodal settings")
    name = settings.chat_template_type
    if name in OWN_STRATEGIES:
        raise UsageError(f"chat_template {name!r}: axolotl's own {name} processing strategy is not emulated for image "
                         f"rows", hint=f"mldebug emulates {', '.join(sorted(BOUNDARIES))} and the templates without "
                                        "a strategy (llava, unset)")
    if processor.processor_class not in CHECKED_PROCESSORS:
        raise UsageError(f"the rows have images and the model's processor is {processor.processor_class}: mldebug "
                         f"emulates axolotl's multimodal collator with {', '.join(sorted(CHECKED_PROCESSORS))} only",
                         hint="check axolotl image rows with one of those processor folders")
    if options.train_on not in (None, "all", "assistant"):
        raise UsageError(f"--train-on {options.train_on} on axolotl image rows is not emulated",
                         hint="set train_on_inputs / roles_to_train in the config")
    masking = strategy(name, processor)
    images = WorkingDirectoryImages(Path(settings.config_folder) if settings.config_folder else None)

    def encode(record: Record) -> VisionRow:
        if record.error is not None:
            row = VisionRow(record.index, record.line)
            row.refused = RowRefused(Code.INVALID_MESSAGES, record.error, "fix the line")
            return row
        return encode_row(record.index, record.line, record.data, processor, settings, masking, images)

    trained = ("every token (train_on_inputs)" if settings.train_on_inputs else
               f"the {', '.join(settings.roles_to_train) or 'no'} turns (train_on_eos {settings.train_on_eos})"
               if masking.boundaries else "every token (this strategy has no role boundaries)")
    beside = " (else the config's folder)" if settings.config_folder else ""
    return VisionPath(
        encode, None, assistant_header(processor),
        {"format": "axolotl multimodal rows (messages or conversations, an images column: its first image used)",
         "chat_template": (f"axolotl's {name!r} template" if settings.template else
                           "the tokenizer's (chat_template unset)" if processor.tokenizer.chat_template else
                           processor.template_source),
         "framework": f"axolotl {EMULATED_AXOLOTL} MultiModalChatDataCollator ({masking.name} strategy): nothing cut, "
                      f"{trained} kept, the pad and image tokens masked; image paths read from the working directory{beside}",
         "train_on": "all" if settings.train_on_inputs or not masking.boundaries else "assistant"})
