"""torchtune's SFT data path for one row: its message transform, ``validate_messages``, and the Qwen2.5 tokenizer.

Semantics of torchtune 0.6.1 (``datasets/_sft.py``, ``datasets/_chat.py``, ``_instruct.py``, ``_alpaca.py``,
``data/_messages.py``, ``models/qwen2_5/_tokenizer.py``, ``models/qwen2/_tokenizer.py``):
- the builders read rows through one message transform each: ``chat_dataset`` (conversation_style openai:
  ``OpenAIToMessages``, sharegpt: ``ShareGPTToMessages``), ``instruct_dataset`` (``InputOutputToMessages``: the
  ``input`` and ``output`` columns) and ``alpaca_dataset`` (``AlpacaToMessages``: its own prompt around
  instruction and input). ``train_on_input`` is False for chat and instruct, True for alpaca; a masked message
  is every one that is not the assistant's unless ``train_on_input`` (so it trains system turns too), except that
  ``new_system_prompt`` (which drops the row's own system messages) and instruct's user turn under it are always
  masked and alpaca's prompt follows ``train_on_input`` alone;
- ShareGPT ``from`` must be system, human or gpt (anything else is a KeyError); an OpenAI message's content is a
  string or a list of parts (text parts read ``text``, image_url parts load the image, any other part is dropped),
  and a message whose content is neither takes the previous message's (the transform's loop variable);
- ``validate_messages`` then raises for fewer than two messages, an assistant message not right after a user one,
  two user messages in a row, a system message after the first;
- ``Qwen2_5Tokenizer.tokenize_messages`` tokenizes each piece on its own (NFC, its 22 special tokens split out,
  byte-level BPE): ``<|im_start|>`` + ``role\\n`` + each text, then ``<|im_end|>`` + ``\\n``, except after the last
  message when it is the assistant's; ipython messages are wrapped as a user turn of ``<tool_response>`` blocks
  (consecutive ones share it); every token takes its message's mask; ``<|im_end|>`` is appended as the EOS with the
  last message's mask; with ``max_seq_len`` the ids are cut to it, the last id made the EOS and its mask set (so
  the EOS is never trained once ``max_seq_len`` is set, even in a row that is not cut);
- ``SFTDataset`` labels are the ids where the mask is False, else -100, unshifted.
Any error on a row stops the run when that row is loaded: mldebug reports it on that row (DS010).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.batch_tokenizer import BatchTokenizer
from mldebug_cli.frameworks.rows import EncodedRow, EncodedTurn, RowProfile
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.sources.row_formats import Chat, RowProblem

VERSION = "0.6.1"
NAME = "torchtune"
# torchtune.models.qwen2_5._tokenizer.QWEN2_5_SPECIAL_TOKENS: what qwen2_5_tokenizer splits out (special_tokens_path unset)
QWEN2_5_SPECIAL_TOKENS = {
    "<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647, "<|box_start|>": 151648, "<|box_end|>": 151649, "<|quad_start|>": 151650,
    "<|quad_end|>": 151651, "<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655, "<|video_pad|>": 151656, "<tool_call>": 151657, "</tool_call>": 151658,
    "<|fim_prefix|>": 151659, "<|fim_middle|>": 151660, "<|fim_suffix|>": 151661, "<|fim_pad|>": 151662,
    "<|repo_name|>": 151663, "<|file_sep|>": 151664,
}
IM_START, IM_END = "<|im_start|>", "<|im_end|>"  # IM_END is also its EOS
QWEN2_5 = "torchtune.models.qwen2_5.qwen2_5_tokenizer"
TOKENIZERS = {"qwen2_5": QWEN2_5, QWEN2_5: QWEN2_5}  # what --torchtune-tokenizer may say
BUILDERS = {"chat": "chat_dataset", "instruct": "instruct_dataset", "alpaca": "alpaca_dataset"}
TRAIN_ON_INPUT = {"chat": False, "instruct": False, "alpaca": True}  # each builder's default
COLUMNS = {"openai": "messages", "sharegpt": "conversations"}  # chat_dataset's conversation_column unless given
SHAREGPT_ROLES = {"system": "system", "human": "user", "gpt": "assistant"}  # ShareGPTToMessages' role_map
ALPACA_PROMPTS = (
    "Below is an instruction that describes a task, paired with an input that provides further context. "
    "Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Input:\n{input}\n\n### Response:\n",
    "Below is an instruction that describes a task. "
    "Write a response that appropriately completes the request.\n\n"
    "### Instruction:\n{instruction}\n\n### Response:\n",
)


class Refused(ValueError):
    """What torchtune raises while it loads the row: its run stops there."""


@dataclass(frozen=True)
class Flags:
    """torchtune's own inspect-data flags (its registry line)."""

    tokenizer: str = QWEN2_5  # --torchtune-tokenizer: the tokenizer builder (tokenizer._component_)
    dataset: str | None = None  # --torchtune-dataset: chat, instruct or alpaca (None: from the row format)
    system_prompt: str | None = None  # --torchtune-system-prompt: the builder's new_system_prompt
    column: str | None = None  # --torchtune-column: chat_dataset's conversation_column (None: messages / conversations)


def read_flags(given: Mapping[str, str]) -> Flags:
    tokenizer = given.get("--torchtune-tokenizer", QWEN2_5)
    if tokenizer not in TOKENIZERS:
        raise UsageError(f"--torchtune-tokenizer {tokenizer}: mldebug emulates torchtune's qwen2_5 tokenizer only",
                         hint=f"pass a Qwen2.5 tokenizer with --torchtune-tokenizer {QWEN2_5} (or qwen2_5)")
    dataset = given.get("--torchtune-dataset")
    if dataset is not None and dataset not in BUILDERS:
        raise UsageError(f"--torchtune-dataset: unknown builder {dataset!r}", hint=f"one of {', '.join(BUILDERS)}")
    return Flags(TOKENIZERS[tokenizer], dataset, given.get("--torchtune-system-prompt"), given.get("--torchtune-column"))


@dataclass(frozen=True)
class Part:
    """An item of a content the row gives as a list: the tokenizer reads its ``type`` and ``content``."""

    item: Any


@dataclass(frozen=True)
class TtMessage:
    """A torchtune ``Message``: its role (as the row gives it), its texts (a text is read by the tokenizer when it
    reaches the message, and may not be a string: see ``Qwen25.text``) and its mask."""

    role: Any
    texts: tuple[Any, ...]
    masked: bool


@dataclass(frozen=True)
class TtChat(Chat):
    """A row as torchtune's message transform reads it (``refusal``: what it raises instead)."""

    turns: tuple[TtMessage, ...] = ()
    refusal: str | None = None


@dataclass(frozen=True)
class Reading:
    """How the builder reads rows: which transform, with which settings."""

    builder: str  # chat, instruct or alpaca
    style: str  # openai, sharegpt, instruct or alpaca
    train_on_input: bool
    system_prompt: str | None = None
    column: str | None = None  # chat_dataset's conversation_column

    def messages(self, row: dict[str, Any]) -> list[TtMessage]:
        """The transform's messages, validated; raises Refused as torchtune raises."""
        try:
            messages = {"openai": self._openai, "sharegpt": self._sharegpt, "instruct": self._instruct,
                        "alpaca": self._alpaca}[self.style](row)
        except NotEmulated:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the transform raises on the row stops torchtune's run
            raise Refused(_raised(self._transform(), exc) + self._column_hint(exc)) from None
        validate(messages)  # SFTTransform validates the messages before the tokenizer reads them
        return messages

    def _transform(self) -> str:
        return {"openai": "OpenAIToMessages", "sharegpt": "ShareGPTToMessages", "instruct": "InputOutputToMessages",
                "alpaca": "AlpacaToMessages"}[self.style]

    def _column_hint(self, exc: Exception) -> str:
        if isinstance(exc, KeyError) and exc.args and exc.args[0] == self.column:
            return f" (chat_dataset's conversation_column is {self.column!r}: --torchtune-column names another)"
        return ""

    def _system(self) -> list[TtMessage]:
        return [TtMessage("system", (self.system_prompt,), True)] if self.system_prompt is not None else []

    def _openai(self, row: dict[str, Any]) -> list[TtMessage]:
        messages = self._system()
        content: Any
        assert self.column is not None  # chat_dataset's rows: the builder names its column
        for message in row[self.column]:
            if message["role"] == "system" and self.system_prompt is not None:
                continue
            masked = message["role"] != "assistant" and not self.train_on_input
            if isinstance(message["content"], list):
                content = []
                for part in message["content"]:
                    if part["type"] == "text":
                        content.append(part["text"])
                    elif part["type"] == "image_url":
                        raise NotEmulated("an image_url part: torchtune loads the image (load_image), and mldebug "
                                          "does not emulate image rows")
            elif isinstance(message["content"], str):
                content = [message["content"]]
            messages.append(TtMessage(message["role"], tuple(content), masked))  # (content: the previous one's)
        return messages

    def _sharegpt(self, row: dict[str, Any]) -> list[TtMessage]:
        if "image" in row:
            raise NotEmulated("the row has an image column: torchtune loads the image, and mldebug does not emulate "
                              "image rows")
        messages = self._system()
        assert self.column is not None  # chat_dataset's rows: the builder names its column
        for message in row[self.column]:
            role = SHAREGPT_ROLES[message["from"]]
            content = message["value"]
            if role == "system" and self.system_prompt is not None:
                continue
            messages.append(TtMessage(role, _content(content), role != "assistant" and not self.train_on_input))
        return messages

    def _instruct(self, row: dict[str, Any]) -> list[TtMessage]:
        if "image" in row:
            raise NotEmulated("the row has an image column: torchtune loads the image, and mldebug does not emulate "
                              "image rows")
        messages = [TtMessage("user", (row["input"],), not self.train_on_input),
                    TtMessage("assistant", (row["output"],), False)]
        return self._system() + messages

    def _alpaca(self, row: dict[str, Any]) -> list[TtMessage]:
        if "input" in row and row["input"]:
            prompt = ALPACA_PROMPTS[0].format(instruction=row["instruction"], input=row["input"])
        else:
            prompt = ALPACA_PROMPTS[1].format(instruction=row["instruction"])
        return [TtMessage("user", (prompt,), not self.train_on_input),
                TtMessage("assistant", _content(row["output"]), False)]


class NotEmulated(ValueError):
    """A row torchtune reads in a way mldebug does not reproduce (images)."""


def _content(content: Any) -> tuple[Any, ...]:
    """Message(content=...): a string is one text part, a list is its parts; anything else fails its assertion."""
    if isinstance(content, str):
        return (content,)
    if not isinstance(content, list):
        raise AssertionError(f"content must be of type List[Dict[str, Any]], got {content}")
    return tuple(Part(item) for item in content)


def _raised(where: str, exc: BaseException, index: int | None = None) -> str:
    at = f" on message {index}" if index is not None else ""
    text = str(exc) if not isinstance(exc, KeyError) else repr(exc.args[0]) if exc.args else ""
    return f"torchtune {VERSION}'s {where} raises{at} ({type(exc).__name__}: {text[:120]}): its run stops here"


def validate(messages: list[TtMessage]) -> None:
    """torchtune.data.validate_messages."""
    if len(messages) < 2:
        raise Refused(_raised("validate_messages", ValueError(f"Messages must be at least length 2, but got "
                                                              f"{len(messages)} messages")))
    last = "assistant"
    for i, message in enumerate(messages):
        if message.role == "assistant" and last != "user":
            problem = f"Assistant message before expected user message at index {i} in messages"
        elif message.role == "user" and last == "user":
            problem = f"Two consecutive user messages at index {i} and {i - 1} in messages"
        elif message.role == "system" and i > 0:
            problem = f"System message at index {i} in messages, but system messages must come first"
        else:
            last = message.role
            continue
        raise Refused(_raised("validate_messages", ValueError(problem)))


# --- the Qwen2.5 tokenizer's tokenize_messages ----------------------------------------------------------------------

@dataclass
class Tokens:
    """Ids with their masks, the text they came from and each id's character span in it."""

    text: str = ""
    ids: list[int] = field(default_factory=list)
    masks: list[bool] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)


class Qwen25:
    """torchtune's Qwen2_5Tokenizer, each piece tokenized by the (fast) Hugging Face tokenizer of the same BPE."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def encode(self, out: Tokens, text: str, masked: bool) -> None:
        text = unicodedata.normalize("NFC", text)
        if text in QWEN2_5_SPECIAL_TOKENS:
            ids, offsets = [QWEN2_5_SPECIAL_TOKENS[text]], [(0, len(text))]
        elif text:
            encoding = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, offsets = list(encoding["input_ids"]), [tuple(o) for o in encoding["offset_mapping"]]
        else:
            ids, offsets = [], []
        shift = len(out.text)
        out.text += text
        out.ids += ids
        out.masks += [masked] * len(ids)
        out.offsets += [(a + shift, b + shift) for a, b in offsets]

    def messages(self, messages: list[TtMessage], max_seq_len: int | None) -> tuple[Tokens, list[tuple[int, int]]]:
        """Every message's tokens, before the EOS and any cut, and each message's [start, end); raises Refused where
        the tokenizer raises on a text that is not a string, in a message it reaches (it stops reading messages once
        it holds max_seq_len tokens: the ones after that are shown up to such a text)."""
        out, spans = Tokens(), []
        last = len(messages) - 1
        for i, message in enumerate(messages):
            try:
                texts = [self.text(t) for t in message.texts]
            except Exception as exc:  # noqa: BLE001 - what its tokenizer raises on the message
                if max_seq_len and len(out.ids) >= max_seq_len:
                    break  # it stopped before this message
                raise Refused(_raised("Qwen2.5 tokenizer", exc, i)) from None
            start, masked = len(out.ids), message.masked
            if message.role == "ipython":
                if i == 0 or messages[i - 1].role != "ipython":
                    self._start(out, "user", masked)
                    self.encode(out, "<tool_response>\n", masked)
                else:
                    self.encode(out, "\n<tool_response>\n", masked)
            else:
                self._start(out, message.role, masked)
            for text in texts:
                self.encode(out, text, masked)
            if message.role == "ipython":
                self.encode(out, "\n</tool_response>", masked)
                if i == last or messages[i + 1].role != "ipython":
                    self._end(out, masked)
            elif message.role != "assistant" or i != last:
                self._end(out, masked)
            spans.append((start, len(out.ids)))
        return out, spans

    @staticmethod
    def text(entry: Any) -> str:
        """What ``tokenize_messages`` reads of one content entry: a list item's ``content`` when its ``type`` is
        text (RuntimeError for another type), and ``encode`` normalizes it (TypeError when it is not a string)."""
        if isinstance(entry, Part):
            kind = entry.item["type"]
            if kind != "text":
                raise RuntimeError(f"Unsupported message content type: {kind}")
            entry = entry.item["content"]
        return unicodedata.normalize("NFC", entry)

    def _start(self, out: Tokens, role: Any, masked: bool) -> None:
        self.encode(out, IM_START, masked)
        self.encode(out, f"{role}\n", masked)

    def _end(self, out: Tokens, masked: bool) -> None:
        self.encode(out, IM_END, masked)
        self.encode(out, "\n", masked)


def tokenize(tokens: Tokens, max_seq_len: int | None) -> tuple[list[int], list[bool]]:
    """The EOS appended with the last mask; truncate(ids, max_seq_len, eos) and truncate(mask, max_seq_len, True).
    (Its early break once max_seq_len is reached changes nothing that the cut keeps.)"""
    eos = QWEN2_5_SPECIAL_TOKENS[IM_END]
    ids, masks = [*tokens.ids, eos], [*tokens.masks, tokens.masks[-1]]
    if max_seq_len:
        ids, masks = ids[:max_seq_len], masks[:max_seq_len]
        ids[-1], masks[-1] = eos, True
    return ids, masks


def labels_of(ids: list[int], masks: list[bool]) -> list[int]:
    """SFTTransform: np.where(mask, CROSS_ENTROPY_IGNORE_IDX, tokens)."""
    return [IGNORE_INDEX if masked else token for token, masked in zip(ids, masks, strict=True)]


# --- the row profile ------------------------------------------------------------------------------------------------

class Rows(RowProfile):
    """torchtune's SFT builders on its Qwen2.5 tokenizer: its message transforms, validate_messages and
    tokenize_messages (each piece on its own, the EOS appended, max_seq_len cut keeping the EOS)."""

    framework = NAME
    default_train_on = "assistant"
    appends_eos = True
    own_templates = True

    def __init__(self, reading: Reading, tokenizer: Any, max_seq_len: int | None) -> None:
        self.reading = reading
        self.max_seq_len = max_seq_len
        self.batched = BatchTokenizer(tokenizer)
        self.qwen = Qwen25(self.batched)

    @property
    def masking_method(self) -> str:
        trained = "every message trained" if self.reading.train_on_input else "only assistant messages trained"
        return f"torchtune {BUILDERS[self.reading.builder]} (train_on_input={self.reading.train_on_input}: {trained})"

    def max_length(self, given: int | None) -> int | None:
        return self.max_seq_len

    def train_on(self, given: str | None, row_format: str) -> str:
        return "all" if self.reading.train_on_input else "assistant"

    def own_sample(self, raw: Any) -> TtChat | None:
        if not isinstance(raw, dict):
            return None
        try:
            turns = tuple(self.reading.messages(raw))
        except ValueError as exc:
            return TtChat([], refusal=str(exc))
        messages = [{"role": str(m.role), "content": "".join(t for t in m.texts if isinstance(t, str))} for m in turns]
        return TtChat(messages, turns=turns)

    def reads(self, sample: Any, raw: Any) -> Any:
        if isinstance(sample, TtChat) and sample.refusal is not None:
            raise Refused(sample.refusal)
        return sample

    def encodes(self, sample: Any) -> bool:
        return isinstance(sample, TtChat)

    def encode(self, sample: Any, setup: Any) -> EncodedRow:
        try:
            tokens, spans = self.qwen.messages(list(sample.turns), self.max_seq_len)
        except Refused as exc:
            raise RowProblem(Code.INVALID_MESSAGES, str(exc)) from None
        ids, masks = tokenize(tokens, self.max_seq_len)
        labels = labels_of(ids, masks)
        full_ids, full_masks = tokenize(tokens, None)
        full_labels = labels_of(full_ids, full_masks)
        eos_at = len(tokens.text)
        text = tokens.text + IM_END
        offsets = [*tokens.offsets, (eos_at, eos_at + len(IM_END))]
        kept = len(ids)
        if spans:  # the appended EOS ends the last message (it takes that message's mask)
            spans[-1] = (spans[-1][0], spans[-1][1] + 1)
        if kept < len(full_ids):  # the last kept id was made the EOS: it shows where it stands
            offsets = offsets[:kept]
        turns = tuple(EncodedTurn(i, start, min(end, kept), not message.masked, "torchtune qwen2_5 tokenizer",
                                  end > kept)
                      for i, (message, (start, end)) in enumerate(zip(sample.turns, spans))
                      if message.role == "assistant" and start < kept)
        return EncodedRow(text, ids, labels, len(full_ids), sum(1 for x in full_labels if x != IGNORE_INDEX),
                          offsets, turns, self.masking_method, cut_ids=full_ids[kept:], cut_labels=full_labels[kept:])

    def walk_pieces(self, sample: Any, setup: Any) -> None:
        self.qwen.messages(list(sample.turns), self.max_seq_len)

    def end_of_turn_hint(self) -> str | None:
        if not self.max_seq_len:
            return None
        return ("torchtune's tokenizer masks the EOS {token} it appends whenever max_seq_len is set (truncate(mask, "
                "max_seq_len, True)): leave tokenizer.max_seq_len unset and keep rows short, or unmask it in your own "
                "transform")

    def chat_template_line(self, source: str | None) -> str | None:
        return "torchtune's Qwen2.5 tokenizer's own ChatML turns (the tokenizer's chat template is not used)"

    def describe(self) -> str:
        cut = (f"max_seq_len {self.max_seq_len}: cut, the last id made the EOS and masked" if self.max_seq_len
               else "no max_seq_len: nothing cut")
        style = {"openai": "conversation_style openai", "sharegpt": "conversation_style sharegpt"}.get(self.reading.style, "")
        system = "" if self.reading.system_prompt is None else ", new_system_prompt set"
        return (f"torchtune {VERSION} {BUILDERS[self.reading.builder]}({style}{', ' if style else ''}train_on_input="
                f"{self.reading.train_on_input}{system}) on {QWEN2_5} (each piece tokenized on its own; <|im_end|> "
                f"appended as the EOS with the last message's mask; {cut})")


STYLES = {"messages": "openai", "sharegpt": "sharegpt"}


def row_profile(options: Any, loaded: Any, row_format: str) -> Rows:
    """torchtune's builder for these rows (--torchtune-dataset, else the row format's), with --train-on (all:
    train_on_input) and --max-length (the tokenizer's max_seq_len), on its Qwen2.5 tokenizer."""
    flags = options.framework_flags if isinstance(options.framework_flags, Flags) else Flags()
    if options.template is not None:
        raise UsageError("--template names LLaMA-Factory's templates: torchtune's tokenizer writes its own turns")
    if options.chat_template is not None:
        raise UsageError("--chat-template: torchtune's Qwen2.5 tokenizer writes its own ChatML turns and reads no "
                         "chat template")
    _require_qwen25(loaded)
    builder = flags.dataset or {"messages": "chat", "sharegpt": "chat", "alpaca": "alpaca"}.get(row_format)
    if builder is None:
        raise UsageError(f"--framework torchtune reads messages, sharegpt or alpaca rows (its chat_dataset, "
                         f"instruct_dataset and alpaca_dataset), not {row_format} rows",
                         hint="instruct_dataset's input/output rows: --torchtune-dataset instruct --data-format alpaca")
    if builder == "chat" and row_format not in STYLES:
        raise UsageError(f"--torchtune-dataset chat reads messages (openai) or sharegpt rows, not {row_format} rows")
    if builder == "alpaca" and flags.system_prompt is not None:
        raise UsageError("--torchtune-system-prompt: alpaca_dataset has no new_system_prompt")
    if options.train_on not in (None, "all", "assistant"):
        raise UsageError(f"--train-on {options.train_on}: torchtune's builders train the assistant messages "
                         "(train_on_input: false, --train-on assistant) or every message (--train-on all)")
    train_on_input = TRAIN_ON_INPUT[builder] if options.train_on is None else options.train_on == "all"
    style = STYLES.get(row_format, "openai") if builder == "chat" else builder
    if flags.column is not None and builder != "chat":
        raise UsageError(f"--torchtune-column: {BUILDERS[builder]} has no conversation_column")
    reading = Reading(builder, style, train_on_input, flags.system_prompt, flags.column or COLUMNS.get(style))
    return Rows(reading, loaded.tokenizer, options.max_length)


def _require_qwen25(loaded: Any) -> None:
    """The tokenizer must be Qwen2.5's: a fast byte-level BPE whose added tokens are torchtune's 22."""
    tok = loaded.tokenizer
    if not getattr(tok, "is_fast", False) or dict(tok.get_added_vocab()) != QWEN2_5_SPECIAL_TOKENS:
        raise InputError(f"{loaded.source}: not a Qwen2.5 tokenizer (its added tokens are not torchtune's "
                         "QWEN2_5_SPECIAL_TOKENS): mldebug emulates torchtune's qwen2_5 tokenizer only",
                         hint="pass a Qwen2.5 tokenizer folder (vocab and merges as torchtune's qwen2_5_tokenizer reads them)")
