"""axolotl's ``chat_template`` masking (axolotl 0.19.0 ``ChatTemplateStrategy``), without axolotl.

What axolotl trains in a conversation, turn by turn:

- a turn is trainable when its own training field says so (``message_field_training``), else when
  ``train_on_inputs`` is set or its role is in ``roles_to_train`` (default ``["assistant"]``);
- a trainable turn's span is its content, plus whatever else the turn renders that a bare
  ``{role, content}`` turn does not (tool calls, reasoning), never the role header: axolotl renders
  the conversation again with that turn reduced to ``{role, content}`` and a sentinel as content,
  once per sentinel (two), and takes the characters where each render differs from the real one
  (the union of both). No difference means the turn was not found: nothing of it is trained.
  Characters map to tokens by overlap. With a tokenizer named like ``*mistral*`` a leading system
  turn is never found;
- after a turn's last token, the first end-of-turn id (``eot_tokens``, default the EOS token) and,
  separately, the first EOS id are trained when they lie within 3 tokens, per ``train_on_eot`` /
  ``train_on_eos``: ``turn`` after trainable turns, ``all`` after every turn, ``last`` only the last
  one found, ``none`` never. So the newline after ``<|im_end|>`` is never trained;
- per-part training: content given as parts where any part carries ``train`` (else ``weight``: 0 masks)
  becomes a training detail, character spans over the joined text (so does a message key named by
  ``message_field_training_detail``, and flagged ``reasoning_content`` parts). A turn with a non-empty
  detail is trainable whatever its role (unless its training field says otherwise); axolotl then
  tokenizes the content alone, marks the tokens lying wholly inside a trained span (each span first
  widened to the tokens it touches) and copies those marks onto the row from the turn's first token
  on, position by position. With reasoning present the turn is located by its content alone
  (reasoning kept in the placeholder render), and the reasoning by its own placeholder render.

axolotl renders twice per turn, quadratic in the turns of a row. Here the spans come from one
placeholder render per conversation shape (or per row, for rows with tools or extra keys): where the
real render is that skeleton with each placeholder replaced by the turn's own rendering, axolotl's
diff is computed on the strings alone. Rows where that does not hold take axolotl's own renders, and
their turns say so (``located_by``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.registry import Code
from mldebug_cli.render.chat import ChatRenderer
from mldebug_cli.render.labels import IGNORE_INDEX, token_range
from mldebug_cli.render.masking import PLACEHOLDER, ChatLayout, Skeleton, Turn, common_prefix, plain_message
from mldebug_cli.sources.row_formats import RowProblem

METHOD = "axolotl-chat-template"
TERMINATOR_OPTIONS = ("all", "turn", "last", "none")
SENTINELS = ("[[dummy_message]]", "zzdummymessagezz")  # axolotl's own, with disjoint first and last characters
TERMINATOR_REACH = 3  # tokens after a turn's span within which its end-of-turn / EOS token is looked for
ROLE_NAMES = {"human": "user", "gpt": "assistant"}  # axolotl's default role mapping, for roles_to_train
THINKING_PAIRS = (("<think>", "</think>"), ("<reasoning>", "</reasoning>"), ("<|begin_of_thought|>", "<|end_of_thought|>"))
SOLUTION_PAIR = ("<|begin_of_solution|>", "<|end_of_solution|>")
SKELETON_CACHE_SIZE = 4096
DETAIL = "training_detail"  # axolotl's own turn keys for per-character training spans
REASONING_DETAIL = "reasoning_training_detail"
THINKING_KEY = "reasoning_content"  # axolotl's template_thinking_key default


class AxolotlConfigError(ValueError):
    """A setting axolotl refuses when it loads the dataset (its own message, reworded)."""


@dataclass(frozen=True)
class AxolotlOptions:
    """The chat_template settings that decide what is trained (axolotl's defaults)."""

    roles_to_train: tuple[str, ...] = ("assistant",)
    train_on_inputs: bool = False
    train_on_eos: str = "turn"
    train_on_eot: str | None = None  # None: as train_on_eos
    eot_tokens: tuple[str, ...] | None = None  # None: the tokenizer's EOS token
    message_field_training: str | None = None  # a message key whose value overrides the role rule
    message_field_training_detail: str | None = None  # a message key holding per-character training spans
    last_turn_only: bool = False  # mldebug's --train-on last: as if earlier turns were marked untrained
    dataset_type: str | None = None  # the dataset's ``type`` (None: chat_template, alpaca for alpaca rows)
    type_options: tuple[tuple[str, Any], ...] = ()  # the dict form's keys, or the entry's ``field``/``conversation``
    field_messages: str | None = None  # the row's key holding the conversation (None: axolotl's "messages")
    message_property_mappings: tuple[tuple[str, str], ...] = ()  # message key -> the row's key (role, content, ...)
    roles: tuple[tuple[str, tuple[str, ...]], ...] | None = None  # custom ``roles:``: role -> the names that map to it
    split_thinking: bool = False  # assistant <think>...</think> moved into reasoning_content
    unemulated: tuple[str, ...] = ()  # settings the config gives that mldebug does not emulate (DS026)
    chat_template_type: str | None = None  # the config's chat_template name (image rows: it picks the strategy)
    multimodal_gap: str | None = None  # why the config's image rows are not emulated (None: they are)
    config_folder: str | None = None  # the config's folder (image paths: the working directory's, else beside it)

    @property
    def role_names(self) -> dict[str, str]:
        """axolotl's role mapping: the custom ``roles:`` (replacing its defaults), else human/gpt to user/assistant."""
        if self.roles:
            return {name: role for role, names in self.roles for name in names}
        return ROLE_NAMES

    @property
    def reads_own_messages(self) -> bool:
        """Settings that change how axolotl reads a conversation from the row."""
        return bool(self.field_messages or self.message_property_mappings or self.roles or self.split_thinking)

    @property
    def eot_option(self) -> str:
        return self.train_on_eot if self.train_on_eot is not None else self.train_on_eos

    @property
    def trains_beyond_assistant(self) -> bool:
        names = self.role_names
        return self.train_on_inputs or any(names.get(r, r) != "assistant" for r in self.roles_to_train)


@dataclass(frozen=True)
class AxolotlMasking:
    """The options resolved against one tokenizer and template, as axolotl resolves them at load."""

    options: AxolotlOptions
    eot_tokens: tuple[str, ...]  # after axolotl drops those the template never writes
    eot_ids: frozenset[int]
    eos_ids: frozenset[int]
    skips_leading_system: bool  # the tokenizer's name contains "mistral"
    # a message's reasoning_content reaches axolotl's turn: the template reads it (axolotl keeps the unmapped keys the
    # template reads; its dataset schema maps role and content only) or the mappings name it
    keeps_reasoning: bool = True

    @classmethod
    def resolve(cls, options: AxolotlOptions, tokenizer: Any, template: str | None) -> AxolotlMasking:
        """Raises AxolotlConfigError where axolotl refuses the settings."""
        for name, value in (("train_on_eos", options.train_on_eos), ("train_on_eot", options.eot_option)):
            if value not in TERMINATOR_OPTIONS:
                raise AxolotlConfigError(f"{name} must be one of {', '.join(TERMINATOR_OPTIONS)}, not {value!r}")
        eos = tokenizer.eos_token
        tokens = list(options.eot_tokens) if options.eot_tokens is not None else [eos] if eos is not None else []
        encode = lambda text: tokenizer.encode(text, add_special_tokens=False)  # noqa: E731
        if template and tokens != [eos]:  # axolotl checks only tokens other than the default
            tokens = [t for t in tokens if t in template]
            for token in tokens:
                if len(encode(token)) != 1:
                    raise AxolotlConfigError(f"{token!r} is encoded as {len(encode(token))} tokens (eot_tokens must be single tokens)")
            if eos in tokens and options.train_on_eos != options.eot_option:
                raise AxolotlConfigError(
                    f"eot_tokens holds the EOS token {eos!r} while train_on_eos ({options.train_on_eos}) differs from "
                    f"train_on_eot ({options.eot_option})")
        eot_ids = frozenset(ids[0] for ids in map(encode, tokens) if len(ids) == 1)
        eos_ids = frozenset(() if tokenizer.eos_token_id is None else (tokenizer.eos_token_id,))
        mistral = "mistral" in str(getattr(tokenizer, "name_or_path", "") or "").lower()
        keeps = template is None or THINKING_KEY in template or THINKING_KEY in dict(options.message_property_mappings)
        return cls(options, tuple(tokens), eot_ids, eos_ids, mistral, keeps)

    def describe(self) -> str:
        o = self.options
        parts = [
            "train_on_inputs" if o.train_on_inputs else f"roles_to_train {list(o.roles_to_train)}",
            f"train_on_eos {o.train_on_eos}",
            f"train_on_eot {o.eot_option}",
            f"eot_tokens {list(self.eot_tokens)}",
        ]
        if o.message_field_training:
            parts.append(f"message_field_training {o.message_field_training!r}")
        if o.message_field_training_detail:
            parts.append(f"message_field_training_detail {o.message_field_training_detail!r}")
        if o.last_turn_only:
            parts.append("last trainable turn only")
        return ", ".join(parts)


def as_axolotl_reads(messages: list[dict[str, Any]], row: Any = None, masking: AxolotlMasking | None = None
                     ) -> list[dict[str, Any]]:
    """The messages as axolotl hands them to the template.

    - a row-level ``system`` text becomes the first message when the conversation has no system message;
    - content (and ``reasoning_content``) given as a list of parts is joined into one text (each part's ``text``,
      ``content`` or ``value``); where any part carries ``train`` or ``weight``, the parts' spans become the turn's
      training detail (``DETAIL``, ``REASONING_DETAIL``), as does the message key ``message_field_training_detail``
      names (the parts' flags win); ``reasoning_content`` is dropped where axolotl's turn does not keep it
      (``keeps_reasoning``), flags and all;
    - tool-call ``arguments`` given as a JSON string are parsed into a mapping.

    Raises ValueError where axolotl stops: a part whose text is not a string, a tool-call argument string that is not
    JSON, a training detail axolotl cannot read.
    """
    out = []
    system = row.get("system") if isinstance(row, dict) else None
    if isinstance(system, str) and messages and messages[0].get("role") != "system":
        out.append({"role": "system", "content": system})
    options = masking.options if masking is not None else None
    detail_field = options.message_field_training_detail if options is not None else None
    dropped = (DETAIL, REASONING_DETAIL) + (() if masking is None or masking.keeps_reasoning else (THINKING_KEY,))
    for i, message in enumerate(messages):
        given = message.get(detail_field) if detail_field else None
        message = {k: v for k, v in message.items() if k not in dropped}
        if given is not None:
            message[DETAIL] = given
        for key, detail_key in (("content", DETAIL), (THINKING_KEY, REASONING_DETAIL)):
            if isinstance(message.get(key), list):  # _convert_content_parts
                text, detail = _joined_parts(message[key], i)
                message[key] = text
                if detail is not None:
                    message[detail_key] = detail
        if message.get(DETAIL) and not _not_trained(message, options):
            _check_detail(message, i)
        calls = message.get("tool_calls")
        if isinstance(calls, list) and any(_string_arguments(c) for c in calls):
            message = {**message, "tool_calls": [_parsed_arguments(c, i) if _string_arguments(c) else c for c in calls]}
        out.append(message)
    return out


def _joined_parts(parts: list[Any], index: int) -> tuple[str, list[dict[str, Any]] | None]:
    """The parts' text joined, and their training detail when any part carries a flag (else None)."""
    texts, detail, flagged, offset = [], [], False, 0
    for part in parts:
        if not isinstance(part, dict):
            continue
        text = part.get("text") or part.get("content") or part.get("value") or ""
        if not isinstance(text, str):
            raise ValueError(f"message {index}: a content part's text is a {type(text).__name__}, not a string; "
                             "axolotl stops on this row (TypeError joining the parts)")
        texts.append(text)
        train, weight = part.get("train"), part.get("weight")
        flagged = flagged or train is not None or weight is not None
        trains = train if train is not None else weight not in (0, 0.0)
        if text:
            detail.append({"begin_offset": offset, "end_offset": offset + len(text) - 1, "train": trains})
            offset += len(text)
    return "".join(texts), detail if flagged else None


def _not_trained(message: dict[str, Any], options: AxolotlOptions | None) -> bool:
    field_name = options.message_field_training if options is not None else None
    own = message.get(field_name) if field_name else None
    return own is not None and not own


def _check_detail(message: dict[str, Any], index: int) -> None:
    """What axolotl needs of a training detail it applies: text content, a list of spans with numeric offsets."""
    detail = message[DETAIL]
    if not isinstance(message.get("content"), str):
        raise ValueError(f"message {index}: a training detail on content that is not text; axolotl stops on this row "
                         "(`train_detail` is not supported when `content` is not a string)")
    number = (int, float)
    if not isinstance(detail, list) or not all(
            isinstance(d, dict) and isinstance(d.get("begin_offset"), number) and isinstance(d.get("end_offset"), number)
            and "train" in d for d in detail):
        raise ValueError(f"message {index}: the training detail is not a list of {{begin_offset, end_offset, train}} "
                         "with numeric offsets; axolotl stops on this row")


def read_conversation(row: Any, options: AxolotlOptions) -> list[dict[str, Any]]:
    """The conversation as axolotl's chat_template strategy reads it from a row: ``field_messages`` (a list, or a
    JSON string of one), each message's keys renamed by ``message_property_mappings`` (unmapped keys kept), its
    role mapped by ``roles``, and with ``split_thinking`` an assistant's ``<think>`` block moved to
    ``reasoning_content``. Raises ValueError where axolotl stops."""
    key = options.field_messages or "messages"
    messages = row.get(key) if isinstance(row, dict) else None
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{key} is a string that is not valid JSON ({exc.msg}); axolotl stops on this row") from None
        except (ValueError, RecursionError):  # a number over Python's digit limit, nesting past its recursion limit
            raise ValueError(f"{key} is a string mldebug cannot read as JSON (a number too long or nesting too deep)") from None
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValueError(f"no list of messages under {key!r} (field_messages): axolotl stops on this row")
    mappings = dict(options.message_property_mappings) or {"role": "role", "content": "content",
                                                            "reasoning_content": "reasoning_content"}
    names = options.role_names if options.roles else {**ROLE_NAMES, "user": "user", "assistant": "assistant"}
    return [_read_message(m, mappings, names, options.split_thinking) for m in messages]


def reads_itself(row: Any) -> bool:
    """A ``messages`` row that axolotl reads otherwise than the shared converter: content given as parts (of any
    form: axolotl joins their text and reads their flags), or no assistant turn (masked like any other row)."""
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return False
    return (any(isinstance(m.get("content"), list) or isinstance(m.get(THINKING_KEY), list) for m in messages)
            or not any(m.get("role") in ("assistant", "gpt") for m in messages))


def _read_message(message: dict[str, Any], mappings: dict[str, str], names: dict[str, str], split: bool) -> dict[str, Any]:
    out = {key: message[source] for key, source in mappings.items() if message.get(source) is not None}
    if "role" in out:
        out["role"] = names.get(out["role"], out["role"])
    if split and out.get("role") == "assistant" and isinstance(out.get("content"), str):
        out.update(_split_thinking(out["content"]))
    taken = set(mappings.values())
    out.update({k: v for k, v in message.items() if k not in taken and k not in out and v is not None})
    return out


def _split_thinking(content: str) -> dict[str, str]:
    """The first thinking pair found: its inside (stripped) as reasoning_content, the rest (or the solution) as content."""
    for start, end in THINKING_PAIRS:
        if start in content and end in content:
            at, stop = content.find(start), content.find(end)
            rest = content[stop + len(end):].lstrip()
            first, last = SOLUTION_PAIR
            if first in rest and last in rest:
                rest = rest[rest.find(first) + len(first):rest.find(last)].strip()
            return {"reasoning_content": content[at + len(start):stop].strip(), "content": rest}
    return {}


def _string_arguments(call: Any) -> bool:
    function = call.get("function") if isinstance(call, dict) else None
    return isinstance(function, dict) and isinstance(function.get("arguments"), str)


def _parsed_arguments(call: dict[str, Any], index: int) -> dict[str, Any]:
    function = call["function"]
    try:
        arguments = json.loads(function["arguments"])
    except json.JSONDecodeError as exc:
        raise ValueError(f"message {index}: tool-call arguments are a string that is not valid JSON ({exc.msg}); "
                         "axolotl stops on this row") from None
    except (ValueError, RecursionError):  # a number over Python's digit limit, nesting past its recursion limit
        raise ValueError(f"message {index}: tool-call arguments are a string mldebug cannot read as JSON (a number too "
                         "long or nesting too deep)") from None
    return {**call, "function": {**function, "arguments": arguments}}


def trainable_turns(messages: list[dict[str, Any]], options: AxolotlOptions) -> list[bool]:
    """Which messages axolotl trains (before locating them)."""
    names = options.role_names
    roles = {names.get(r, r) for r in options.roles_to_train}
    field = options.message_field_training
    flags = []
    for message in messages:
        own = message.get(field) if field else None
        if own is not None:
            flags.append(bool(own))
        elif message.get(DETAIL) is not None or message.get(REASONING_DETAIL) is not None:
            flags.append(bool(message.get(DETAIL)) or bool(message.get(REASONING_DETAIL)))
        else:
            flags.append(options.train_on_inputs or message.get("role") in roles)
    if options.last_turn_only and any(flags):
        last = len(flags) - 1 - flags[::-1].index(True)
        flags = [k == last for k in range(len(flags))]
    return flags


@dataclass(frozen=True)
class AxolotlTurn(Turn):
    """A turn and, where its reasoning carries a training detail, the reasoning's own span (None: not looked for)."""

    reasoning: tuple[int, int] | None = field(default=None, compare=False)


def located_by_content(message: dict[str, Any]) -> bool:
    """axolotl locates a turn by its content alone (reasoning kept in the placeholder render) when the turn carries a
    training detail and reasoning."""
    return bool(message.get(DETAIL) or message.get(REASONING_DETAIL)) and message.get(THINKING_KEY) is not None


class AxolotlLocator:
    """Lays out chat rows the way axolotl masks them; skeleton renders are kept per conversation shape."""

    def __init__(self, renderer: ChatRenderer, masking: AxolotlMasking) -> None:
        self.renderer = renderer
        self.masking = masking
        self._skeletons: dict[tuple, Skeleton | None] = {}

    def layout(self, messages: list[dict[str, Any]], tools: list[Any] | None) -> ChatLayout:
        """The render, the turns axolotl looks at (content spans; empty = not found) and the trained spans."""
        text = self.renderer.render(messages, tools).text
        trainable = trainable_turns(messages, self.masking.options)
        options = self.masking.options
        every_turn = "all" in (options.train_on_eos, options.eot_option)
        looked_at = [k for k, trained in enumerate(trainable) if trained or every_turn]
        skipped = 0 if self.masking.skips_leading_system and messages and messages[0].get("role") == "system" else None
        wanted = [k for k in looked_at if k != skipped]
        plain = [k for k in wanted if not located_by_content(messages[k])]
        spans = self._spans(messages, tools, text, plain)
        for k in set(wanted) - set(plain):
            spans[k] = (*_rendered_sentinel_span(self.renderer, messages, tools, text, k, "content"), "sentinel-renders")
        turns = []
        for k in looked_at:
            start, end, located_by = spans.get(k, (0, 0, "skipped-system"))
            message = messages[k]
            if trainable[k] and end > start and message.get(DETAIL) and not message.get("content"):
                raise RowProblem(Code.INVALID_MESSAGES, "a training detail on empty content: axolotl tokenizes the "
                                 "content alone and stops on this row (IndexError)", k)
            reasoning = None
            if trainable[k] and message.get(REASONING_DETAIL) and message.get(THINKING_KEY) is not None:
                reasoning = (0, 0) if k == skipped else _rendered_sentinel_span(
                    self.renderer, messages, tools, text, k, "reasoning")
            turns.append(AxolotlTurn(k, start, end, trainable[k], located_by, reasoning=reasoning))
        trained = tuple((t.start, t.end) for t in turns if t.trained and t.end > t.start and _trains_some(messages[t.message_index]))
        return ChatLayout(text, tuple(turns), trained, METHOD)

    def _spans(self, messages, tools, text: str, wanted: list[int]) -> dict[int, tuple[int, int, str]]:
        """{message index: (start, end, located_by)} for the turns in ``wanted``."""
        if not wanted:
            return {}
        blocks = self._blocks_by_shape(messages, tools, text, wanted)
        if blocks is None:
            blocks = self._blocks_by_skeleton(messages, tools, text, wanted)
        spans = {}
        for k in wanted:
            span = _sentinel_span(text, *blocks[k]) if blocks is not None else None
            if span is None:
                spans[k] = (*_rendered_sentinel_span(self.renderer, messages, tools, text, k), "sentinel-renders")
            else:
                spans[k] = (*span, "placeholders")
        return spans

    def _blocks_by_shape(self, messages, tools, text: str, wanted: list[int]) -> dict[int, tuple[int, int]] | None:
        """Plain rows: one skeleton per sequence of roles, every content a placeholder, checked by substitution."""
        if tools or not all(plain_message(m) for m in messages):
            return None
        shape = (tuple(m["role"] for m in messages), tuple(wanted))
        if shape not in self._skeletons:
            if len(self._skeletons) >= SKELETON_CACHE_SIZE:
                self._skeletons.clear()
            reduced = [{"role": role, "content": PLACEHOLDER.format(k)} for k, role in enumerate(shape[0])]
            self._skeletons[shape] = Skeleton.render(self.renderer, reduced, None, range(len(messages)), wanted)
        skeleton = self._skeletons[shape]
        return skeleton.substituted([m["content"] for m in messages], text, wanted) if skeleton else None

    def _blocks_by_skeleton(self, messages, tools, text: str, wanted: list[int]) -> dict[int, tuple[int, int]] | None:
        """Any row: the wanted turns reduced to placeholders, the rest as they are; blocks found between anchors."""
        reduced = list(messages)
        for k in wanted:
            reduced[k] = {"role": messages[k].get("role"), "content": PLACEHOLDER.format(k)}
        skeleton = Skeleton.render(self.renderer, reduced, tools, wanted, wanted)
        return skeleton.anchored(text) if skeleton else None


def _sentinel_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """axolotl's diff span for a turn rendered as ``text[start:end]`` where a sentinel would render in its place.

    The other render is ``text[:start] + sentinel + text[end:]``. The sentinels' first characters
    differ, and so do their last: one of the two diffs starts at ``start`` and one ends at ``end``,
    so the union is the block itself, unless the block is a prefix or suffix of a sentinel or the
    reverse (then the diff runs into the surrounding text: None, only the renders tell). An empty
    block is a pure insertion: each diff is empty, at ``start`` plus the characters after it that
    match the sentinel's head, and their union is not always empty.
    """
    if start == end:
        heads = [common_prefix(text[start:start + len(s)], s) for s in SENTINELS]
        if any(k == len(s) for k, s in zip(heads, SENTINELS)):
            return None
        return (start, start + max(heads))
    for sentinel in SENTINELS:
        n = min(end - start, len(sentinel))
        if text.startswith(sentinel[:n], start, end) or text.endswith(sentinel[-n:], start, end):
            return None
    return (start, end)


def _trains_some(message: dict[str, Any]) -> bool:
    """A turn without a training detail trains its span; with one, where some span of it trains."""
    details = [d for key in (DETAIL, REASONING_DETAIL) for d in (message.get(key) or ())]
    return not details or any(isinstance(d, dict) and d.get("train") for d in details)


def _dummy(message: dict[str, Any], sentinel: str, keep: str) -> dict[str, Any]:
    """axolotl's placeholder turn: role and the sentinel as content ("content": reasoning kept), or ("reasoning") the
    content kept and the sentinel as reasoning."""
    if keep == "reasoning":
        content = message.get("content")
        return {"role": message.get("role"), "content": "" if content is None else content, THINKING_KEY: sentinel}
    dummy = {"role": message.get("role"), "content": sentinel}
    if keep == "content" and THINKING_KEY in message:
        dummy[THINKING_KEY] = message[THINKING_KEY]
    return dummy


def _rendered_sentinel_span(renderer: ChatRenderer, messages, tools, text: str, k: int, keep: str = "turn") -> tuple[int, int]:
    """axolotl's own way: render with turn k reduced to each sentinel, union of the differing spans."""
    starts, ends = [], []
    for sentinel in SENTINELS:
        dummy = [*messages[:k], _dummy(messages[k], sentinel, keep), *messages[k + 1:]]
        other = renderer.render(dummy, tools).text
        limit = min(len(text), len(other))
        first = common_prefix(text, other, limit)
        starts.append(first)
        ends.append(len(text) - common_prefix(text[::-1], other[::-1], limit - first))
    first, last = min(starts), max(ends)
    return (first, last) if last > first else (0, 0)


def label_tokens(encoding, ids: list[int], layout: ChatLayout, masking: AxolotlMasking,
                 messages: list[dict[str, Any]] | None = None, tokenizer: Any = None):
    """Labels, straddling positions and per-turn token ranges [start, end) for an axolotl layout.

    A turn's range runs from its first content token through the end-of-turn/EOS token axolotl found
    for it (trained or not); turns not found get (0, 0). A turn with a training detail is labelled
    by it (``detail_marks``), not whole.
    """
    labels = [IGNORE_INDEX] * len(ids)
    straddles: set[int] = set()
    ranges: list[tuple[int, int]] = []
    options = masking.options
    checks = ((masking.eot_ids, options.eot_option), (masking.eos_ids, options.train_on_eos))
    last_found = [-1, -1]
    for turn in layout.turns:
        first, stop = _token_span(encoding, turn.start, turn.end, len(ids))
        found = stop > first
        message = messages[turn.message_index] if messages is not None else {}
        detail, reasoning_detail = message.get(DETAIL), message.get(REASONING_DETAIL)
        if turn.trained and found and detail:
            _copy_marks(labels, ids, first, detail_marks(tokenizer, message["content"], detail))
        elif turn.trained and found and not reasoning_detail:
            labels[first:stop] = ids[first:stop]
            if encoding.token_to_chars(first)[0] < turn.start:
                straddles.add(first)
            if encoding.token_to_chars(stop - 1)[1] > turn.end:
                straddles.add(stop - 1)
        reasoning: tuple[int, int] | None = getattr(turn, "reasoning", None)
        if turn.trained and reasoning_detail and reasoning is not None:
            begin, until = _token_span(encoding, reasoning[0], reasoning[1], len(ids))
            if until > begin:
                _copy_marks(labels, ids, begin, detail_marks(tokenizer, message[THINKING_KEY], reasoning_detail))
        reach = stop
        for n, (wanted, option) in enumerate(checks):
            at = _terminator(ids, stop if found else -1, wanted)
            if at is None:
                continue
            last_found[n] = at
            if option == "all" or (option == "turn" and turn.trained):
                labels[at] = ids[at]
            reach = max(reach, at + 1)
        ranges.append((first, reach) if found else (0, 0))
    for at, (_, option) in zip(last_found, checks):
        if option == "last" and at >= 0:
            labels[at] = ids[at]
    return labels, sorted(straddles), ranges


def _copy_marks(labels: list[int], ids: list[int], first: int, marks: list[bool]) -> None:
    """axolotl copies the marks of the text tokenized alone onto the row position by position from the turn's first
    token (where the text tokenizes differently in context, the marks land where the counting puts them)."""
    for i, trained in enumerate(marks):
        if trained and first + i < len(ids):
            labels[first + i] = ids[first + i]


def detail_marks(tokenizer: Any, text: str, detail: list[dict[str, Any]]) -> list[bool]:
    """Which tokens of ``text`` tokenized alone axolotl trains under a training detail (inclusive character spans).

    Each token's span runs from its start to the next token's start less one (the last: to the text's end); each
    detail span is widened to the first token reaching into it and the last token starting inside it; a token is
    trained when it lies wholly inside a widened span whose ``train`` is true.
    """
    starts = [start for start, _ in tokenizer(text, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]]
    if not starts:
        return []
    bounds = [(start, following - 1) for start, following in zip(starts, starts[1:])] + [(starts[-1], len(text) - 1)]
    n = len(bounds)
    widened = []
    for span in detail:
        begin, end = span["begin_offset"], span["end_offset"]
        first = next((i for i, (start, _) in enumerate(bounds) if start >= begin), n)
        if first > 0 and bounds[first - 1][1] > begin:
            first -= 1
        last = next((i for i in range(n - 1, -1, -1) if bounds[i][1] <= end), -1)
        if last < n - 1 and bounds[last + 1][0] < end:
            last += 1
        if first <= last:
            widened.append((bounds[first][0], bounds[last][1], bool(span["train"])))
    return [any(trains and start >= low and stop <= high for low, high, trains in widened) for start, stop in bounds]


def _token_span(encoding, start: int, end: int, n: int) -> tuple[int, int]:
    """Tokens overlapping characters [start, end), with every piece of a character split over several tokens."""
    first, stop = token_range(encoding, start, end)
    if stop > first:
        while stop < n and encoding.token_to_chars(stop)[0] < end:
            stop += 1
    return first, stop


def _terminator(ids: list[int], turn_end: int, wanted: frozenset[int]) -> int | None:
    """axolotl's search: the first wanted id from ``turn_end`` on, if within reach (-1: a turn not found)."""
    if not wanted:
        return None
    if turn_end < 0:  # axolotl scans from index -1: the last id first, which it then takes for "not found"
        if ids and ids[-1] in wanted:
            return None
        turn_end = 0
        reach = TERMINATOR_REACH - 1
    else:
        reach = TERMINATOR_REACH
    for at in range(turn_end, min(turn_end + reach + 1, len(ids))):
        if ids[at] in wanted:
            return at
    return None
