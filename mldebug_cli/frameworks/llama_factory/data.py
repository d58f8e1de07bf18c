"""LLaMA-Factory's supervised data path for one row: converter, template encoding, budget split, labels.

Semantics of llamafactory 0.9.5 (``data/converter.py``, ``data/template.py``,
``data/processor/supervised.py``):
- the converter keeps a leading system message apart and wants user/observation turns at even positions,
  assistant/function turns at odd ones and an even count; any other row is dropped ("Invalid role tag",
  "Invalid message count");
- the tokenizer is fixed first: ``replace_eos`` makes the first stop word the EOS, the other stop words
  become special tokens;
- each message becomes its template slots, tokenized one by one without special tokens; the first also
  carries the prefix and the system slot (system text + tool description);
- reasoning templates (qwen3): ``enable_thinking: false`` strips think blocks and puts an empty one in the
  prompt; otherwise a reply without one gets an empty think block it is trained on; under
  ``mask_history`` earlier replies lose their think blocks;
- pairs (prompt, reply) share ``cutoff_len`` by ``infer_seqlen``, in order, or last pair first under
  ``mask_history`` (which then trains only the last reply); ``train_on_prompt`` trains the prompts too;
  ``efficient_eos`` templates label the EOS at the start of later prompts and append one EOS at the end.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.frameworks.llama_factory.templates import BOS, EOS, LfTemplate, Settings, describe_tools, write_calls
from mldebug_cli.frameworks.rows import EncodedSide, RowDropped
from mldebug_cli.render.labels import IGNORE_INDEX
from mldebug_cli.render.truncation import infer_seqlen

USER, ASSISTANT, OBSERVATION, FUNCTION = "user", "assistant", "observation", "function"
PROMPT_ROLES, REPLY_ROLES = (USER, OBSERVATION), (ASSISTANT, FUNCTION)


class InvalidRow(RowDropped):
    """A row LLaMA-Factory's converter refuses: it leaves the row out of training."""


@dataclass(frozen=True)
class LfMessage:
    role: str
    content: str
    index: int  # the message's index in the row as mldebug read it
    calls: tuple[tuple[str, Any], ...] = ()  # a function turn's (name, arguments)


def lf_messages(messages: list[dict[str, Any]]) -> tuple[str, list[LfMessage]]:
    """(system, turns) as the ShareGPT/alpaca converter aligns them; raises InvalidRow as it would drop the row."""
    system, start = "", 0
    if messages and messages[0].get("role") == "system":
        system, start = _text(messages[0].get("content")), 1
    turns = []
    for index in range(start, len(messages)):
        message = messages[index]
        turn = _lf_message(message, index)
        allowed = PROMPT_ROLES if (index - start) % 2 == 0 else REPLY_ROLES
        if turn is None or turn.role not in allowed:
            raise InvalidRow(f"message {index} ({message.get('role')}) is out of LLaMA-Factory's order "
                             "(user/observation, then assistant/function, alternating): its converter drops the row "
                             "(Invalid role tag)")
        turns.append(turn)
    if len(turns) % 2:
        raise InvalidRow(f"{len(turns)} turn{'s' * (len(turns) > 1)} after the system message, an odd count: LLaMA-Factory's converter "
                         "drops the row (Invalid message count)")
    if not turns:  # the converter passes it on with no prompt and no response; the processor drops it
        raise InvalidRow("no turns after the system message: LLaMA-Factory's processor drops the row (Dropped "
                         "invalid example)")
    return system, turns


def _lf_message(message: dict[str, Any], index: int) -> LfMessage | None:
    role = message.get("role")
    if role == "user":
        return LfMessage(USER, _text(message.get("content")), index)
    if role == "tool":
        return LfMessage(OBSERVATION, _text(message.get("content")), index)
    if role == "assistant" and message.get("tool_calls"):
        calls = tuple(_call(c) for c in message["tool_calls"])
        raw = [{"name": n, "arguments": a} for n, a in calls]
        return LfMessage(FUNCTION, json.dumps(raw[0] if len(raw) == 1 else raw, ensure_ascii=False), index, calls)
    if role == "assistant":
        return LfMessage(ASSISTANT, _text(message.get("content")), index)
    return None


def typed_parts(raw: Any) -> tuple[int, list[str]] | None:
    """(the index of the first message whose content is a list of typed parts, the part types) in a raw chat row
    (``messages``/``conversations``, role/content or from/value); None when every content is a string."""
    turns = raw.get("messages", raw.get("conversations")) if isinstance(raw, dict) else None
    for index, turn in enumerate(turns if isinstance(turns, list) else []):
        content = turn.get("content", turn.get("value")) if isinstance(turn, dict) else None
        if isinstance(content, list):
            kinds = [str(p.get("type")) for p in content if isinstance(p, dict)]
            return index, sorted(set(kinds)) or ["no type"]
    return None


def _call(call: dict[str, Any]) -> tuple[str, Any]:
    function = call.get("function", call)
    # arguments given as a JSON string stay a string: LLaMA-Factory's FunctionFormatter json.dumps them again, so the
    # trained text holds them double-encoded ("parameters": "{\"item\": ...}")
    return function.get("name", ""), function.get("arguments", {})


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


# --- the tokenizer as LLaMA-Factory fixes it ------------------------------------------------------------------

def fixed_tokenizer(tokenizer: Any, chosen: LfTemplate) -> Any:
    """The tokenizer after fix_special_tokens: a copy when the template changes its EOS or special tokens."""
    stop = list(chosen.stop_words)
    replace_eos = chosen.replace_eos and stop and tokenizer.eos_token != stop[0]
    added = tokenizer.get_added_vocab()
    new_specials = [w for w in stop[1 if chosen.replace_eos else 0:] if w not in added]
    if not (replace_eos or tokenizer.eos_token_id is None or new_specials):
        return tokenizer
    tok = copy.deepcopy(tokenizer)
    if chosen.replace_eos and stop:
        tok.add_special_tokens({"eos_token": stop[0]})
        stop = stop[1:]
    if tok.eos_token_id is None:
        tok.add_special_tokens({"eos_token": "<|endoftext|>"})
    if stop:
        try:
            tok.add_special_tokens({"additional_special_tokens": stop}, replace_additional_special_tokens=False)
        except TypeError:
            tok.add_special_tokens({"additional_special_tokens": stop})
    return tok


# --- encoding --------------------------------------------------------------------------------------------------

@dataclass
class Piece:
    """Token ids with the text they came from and each token's character span in it."""

    text: str = ""
    ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)

    def add(self, other: Piece) -> Piece:
        shift = len(self.text)
        return Piece(self.text + other.text, self.ids + other.ids,
                     self.offsets + [(a + shift, b + shift) for a, b in other.offsets])


class Encoder:
    """A template applied with a (fixed) tokenizer: messages to (prompt, reply) pieces."""

    def __init__(self, chosen: LfTemplate, settings: Settings, tokenizer: Any) -> None:
        self.template = chosen
        self.settings = settings
        self.tokenizer = tokenizer
        self.system_default = settings.default_system if settings.default_system is not None else chosen.default_system

    def text(self, text: str) -> Piece:
        if not text:
            return Piece()
        try:
            encoding = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            return Piece(text, list(encoding["input_ids"]), [tuple(o) for o in encoding["offset_mapping"]])
        except NotImplementedError:  # slow tokenizers have no offsets
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            return Piece(text, ids, [(0, 0)] * len(ids))

    def slots(self, slots: tuple[str, ...], **values: str) -> Piece:
        piece = Piece()
        for slot in slots:
            if slot is BOS or slot is EOS:
                token_id = self.tokenizer.bos_token_id if slot is BOS else self.tokenizer.eos_token_id
                if token_id is not None:
                    token = self.tokenizer.bos_token if slot is BOS else self.tokenizer.eos_token
                    piece = piece.add(Piece(token, [token_id], [(0, len(token))]))
                continue
            for name, value in values.items():
                slot = slot.replace("{{" + name + "}}", value, 1)
            piece = piece.add(self.text(slot))
        return piece

    def _filled(self, slots: tuple[str, ...], content: str) -> str:
        """The first slot's text with content (Llama2Template fuses the system this way)."""
        return slots[0].replace("{{content}}", content, 1) if slots and isinstance(slots[0], str) else ""

    def messages(self, system: str, turns: list[LfMessage], tools: list[Any] | None) -> list[Piece]:
        t = self.template
        system = system or self.system_default
        tool_text = describe_tools(t.tool_format, tools, self.settings.tool_date) if tools else ""
        pieces = []
        for i, turn in enumerate(turns):
            piece, fused = Piece(), ""
            if i == 0:
                piece = self.slots(t.prefix)
                if system or tools is not None:  # a tools column of "[]" is a non-empty string: it opens the system slot
                    if t.kind == "llama2":
                        fused = self._filled(t.system, system + tool_text)
                    else:
                        piece = piece.add(self.slots(t.system, content=system + tool_text))
            if turn.role == USER:
                piece = piece.add(self.slots(t.user, content=fused + turn.content, idx=str(i // 2)))
            elif turn.role == ASSISTANT:
                piece = piece.add(self.slots(t.assistant, content=turn.content))
            elif turn.role == OBSERVATION:
                piece = piece.add(self.slots(t.observation, content=turn.content))
            else:
                piece = piece.add(self.slots(t.function, content=write_calls(t.function_tool_format, list(turn.calls))))
            pieces.append(piece)
        return pieces

    def pairs(self, system: str, turns: list[LfMessage], tools: list[Any] | None) -> list[tuple[Piece, Piece]]:
        """encode_multiturn: (prompt, reply) per turn pair, with a reasoning template's think-block rules."""
        if self.template.kind != "reasoning":
            pieces = self.messages(system, turns, tools)
            return [(pieces[i], pieces[i + 1]) for i in range(0, len(pieces), 2)]
        thinking = self.settings.enable_thinking
        discard = self.settings.mask_history and not self.settings.preserve_thinking
        turns = list(turns)
        for i in range(1, len(turns), 2):
            if not thinking or (discard and i < len(turns) - 2):
                turns[i] = self._thoughtless(turns[i])
        pieces = self.messages(system, turns, tools)
        open_word, close_word = (w.strip() for w in self.template.thought_words)
        empty = self.text("".join(self.template.thought_words))
        for i in ([len(turns) - 2] if discard else range(0, len(turns), 2)):
            reply = turns[i + 1].content
            if open_word not in reply and close_word not in reply:
                if thinking:
                    pieces[i + 1] = empty.add(pieces[i + 1])
                else:
                    pieces[i] = pieces[i].add(empty)
        return [(pieces[i], pieces[i + 1]) for i in range(0, len(pieces), 2)]

    def oneturn(self, system: str, turns: list[LfMessage], tools: list[Any] | None) -> tuple[Piece, Piece]:
        """encode_oneturn: everything before the last message is the prompt; reasoning templates strip history's
        think blocks (unless preserve_thinking) and give a reply without one an empty block."""
        if self.template.kind == "reasoning":
            turns = list(turns)
            last = len(turns) - 1
            for i in range(1, last - 1, 2):
                if not self.settings.preserve_thinking:
                    turns[i] = self._thoughtless(turns[i])
            if self.settings.enable_thinking is False:
                turns[last] = self._thoughtless(turns[last])
        pieces = self.messages(system, turns, tools)
        prompt = Piece()
        for piece in pieces[:-1]:
            prompt = prompt.add(piece)
        reply = pieces[-1]
        if self.template.kind == "reasoning":
            open_word, close_word = (w.strip() for w in self.template.thought_words)
            if open_word not in turns[-1].content and close_word not in turns[-1].content:
                empty = self.text("".join(self.template.thought_words))
                if self.settings.enable_thinking:
                    reply = empty.add(reply)
                else:
                    prompt = prompt.add(empty)
        return prompt, reply

    def _thoughtless(self, turn: LfMessage) -> LfMessage:
        return LfMessage(turn.role, self.remove_thought(turn.content), turn.index, turn.calls)

    def remove_thought(self, content: str) -> str:
        start, end = (re.escape(w) for w in self.template.thought_words)
        return re.sub(f"{start}(.*?){end}", "", content, flags=re.DOTALL).lstrip("\n")


# --- the supervised processor ----------------------------------------------------------------------------------

@dataclass
class Supervised:
    """A row's ids and labels after the cutoff_len split, with what it kept of each pair."""

    text: str
    input_ids: list[int]
    labels: list[int]
    offsets: list[tuple[int, int]]
    full_length: int
    trained_before_truncation: int
    replies: list[tuple[int, int, int, bool, bool]]  # (reply's pair number, start, end, trained, cut) in the kept ids
    cut_ids: list[int]
    cut_labels: list[int]
    kept: list[tuple[int, int]] = field(default_factory=list)  # (source, target) tokens kept of each pair, in order


def supervise(pairs: list[tuple[Piece, Piece]], settings: Settings, chosen: LfTemplate, eos_id: int | None) -> Supervised:
    """_encode_data_example: the budget split, masking and efficient EOS, on pieces with offsets."""
    efficient = chosen.efficient_eos
    order = list(range(len(pairs)))[::-1] if settings.mask_history else list(range(len(pairs)))
    kept: dict[int, tuple[int, int, list[int], list[int]]] = {}  # pair -> (source kept, target kept, labels...)
    total = 1 if efficient else 0
    trained_before = 0
    for turn_idx, n in enumerate(order):
        source, target = pairs[n]
        source_label, target_label = _labels(source.ids, target.ids, turn_idx, settings, efficient, eos_id)
        trained_before += sum(1 for x in source_label + target_label if x != IGNORE_INDEX)
        if total >= settings.cutoff_len:
            continue
        source_len, target_len = infer_seqlen(len(source.ids), len(target.ids), settings.cutoff_len - total)
        total += source_len + target_len
        kept[n] = (source_len, target_len, source_label[:source_len], target_label[:target_len])
    text = "".join(s.text + t.text for s, t in pairs)
    ids, labels, offsets, replies, cut_ids, cut_labels = [], [], [], [], [], []
    lengths = []
    shift = 0
    for n, (source, target) in enumerate(pairs):
        source_len, target_len, source_label, target_label = kept.get(n, (0, 0, [], []))
        lengths.append((source_len, target_len))
        full_source, full_target = _labels(source.ids, target.ids, order.index(n), settings, efficient, eos_id)
        cut_ids += source.ids[source_len:] + target.ids[target_len:]
        cut_labels += full_source[source_len:] + full_target[target_len:]
        ids += source.ids[:source_len]
        labels += source_label
        offsets += [(a + shift, b + shift) for a, b in source.offsets[:source_len]]
        shift += len(source.text)
        start = len(ids)
        ids += target.ids[:target_len]
        labels += target_label
        offsets += [(a + shift, b + shift) for a, b in target.offsets[:target_len]]
        shift += len(target.text)
        if target_len:
            replies.append((n, start, len(ids), any(x != IGNORE_INDEX for x in target_label), target_len < len(target.ids)))
    full_length = sum(len(s.ids) + len(t.ids) for s, t in pairs)
    if efficient and eos_id is not None:
        ids.append(eos_id)
        labels.append(eos_id)
        offsets.append((len(text), len(text)))
        full_length += 1
        trained_before += 1
    return Supervised(text, ids, labels, offsets, full_length, trained_before, replies, cut_ids, cut_labels, lengths)


def _labels(source: list[int], target: list[int], turn_idx: int, settings: Settings, efficient: bool,
            eos_id: int | None) -> tuple[list[int], list[int]]:
    if settings.train_on_prompt:
        source_label = list(source)
    elif efficient and turn_idx != 0:
        # (a tokenizer without EOS under an efficient-EOS template: LLaMA-Factory's None label fails; masked here)
        source_label = ([IGNORE_INDEX if eos_id is None else eos_id] + [IGNORE_INDEX] * (len(source) - 1)) if source else []
    else:
        source_label = [IGNORE_INDEX] * len(source)
    target_label = [IGNORE_INDEX] * len(target) if settings.mask_history and turn_idx != 0 else list(target)
    return source_label, target_label


# --- the pairwise processor (stage dpo/orpo): chosen and rejected through the same template ---------------------

SHAREGPT_TAGS = {"human": USER, "user": USER, "gpt": ASSISTANT, "assistant": ASSISTANT, "observation": OBSERVATION,
                 "function_call": FUNCTION}


@dataclass(frozen=True)
class RankedRow:
    """A preference row as LLaMA-Factory's converter reads it (``ranking: true``)."""

    system: str
    prompt: list[LfMessage]
    chosen: LfMessage
    rejected: LfMessage
    tools: list[Any] | None = None


def ranked_row(row: dict[str, Any]) -> RankedRow:
    """A ShareGPT (``conversations`` + ``chosen``/``rejected`` turns) or alpaca (``instruction`` + ``chosen``/
    ``rejected`` text) ranking row; raises InvalidRow where the converter or processor drops it."""
    tools = row.get("tools")
    tools = json.loads(tools) if isinstance(tools, str) and tools else (tools or None)
    if "conversations" in row:
        turns = list(row["conversations"])
        system = row.get("system") or ""
        if turns and turns[0].get("from") == "system":
            system, turns = turns[0].get("value", ""), turns[1:]
        prompt = _sharegpt_turns(turns)
        if len(prompt) % 2 == 0:
            raise InvalidRow(f"{len(prompt)} prompt turns, an even count: LLaMA-Factory drops the row (Invalid message count)")
        replies = []
        for name in ("chosen", "rejected"):
            reply = row.get(name)
            tag = reply.get("from") if isinstance(reply, dict) else None
            role = SHAREGPT_TAGS.get(tag) if isinstance(tag, str) else None
            if role not in REPLY_ROLES or not isinstance(reply, dict):
                raise InvalidRow(f"{name} is not an assistant or function_call turn: LLaMA-Factory drops the row")
            replies.append(_ranked_message(role, reply.get("value", ""), len(prompt)))
        return RankedRow(system, prompt, replies[0], replies[1], tools)
    for name in ("chosen", "rejected"):
        if not isinstance(row.get(name), str):
            raise ValueError(f"{name} is not text, and an alpaca ranking row's replies are")
    history = [m for old, new in (row.get("history") or []) for m in ((USER, old), (ASSISTANT, new))]
    query = "\n".join(q for q in (row.get("instruction"), row.get("input")) if q)
    prompt = [LfMessage(role, text, i) for i, (role, text) in enumerate([*history, (USER, query)])]
    return RankedRow(row.get("system") or "", prompt, LfMessage(ASSISTANT, row["chosen"], len(prompt)),
                     LfMessage(ASSISTANT, row["rejected"], len(prompt)), tools)


def _sharegpt_turns(turns: list[dict[str, Any]]) -> list[LfMessage]:
    """ShareGPT turns (from/value) after the system one, in the converter's order (user/observation, then
    assistant/function, alternating); raises InvalidRow as it drops a row out of order."""
    out = []
    for i, turn in enumerate(turns):
        tag = turn.get("from")
        role = SHAREGPT_TAGS.get(tag) if isinstance(tag, str) else None
        if role not in (PROMPT_ROLES if i % 2 == 0 else REPLY_ROLES):
            raise InvalidRow(f"turn {i} ({turn.get('from')}) is out of order: LLaMA-Factory drops the row (Invalid role tag)")
        out.append(_ranked_message(role, turn.get("value", ""), i))
    return out


def _ranked_message(role: str, value: str, index: int) -> LfMessage:
    if role != FUNCTION:
        return LfMessage(role, value, index)
    calls = json.loads(value)
    calls = calls if isinstance(calls, list) else [calls]
    return LfMessage(role, value, index, tuple((c["name"], c["arguments"]) for c in calls))


def pairwise(encoder: Encoder, row: RankedRow, eos_id: int | None) -> tuple[EncodedSide, EncodedSide]:
    """PairwiseDatasetProcessor: each side encoded in one turn (prompt, reply); the prompt and the longer reply share
    cutoff_len by infer_seqlen, both replies cut to the same length; the prompt is never trained."""
    prompt, chosen = encoder.oneturn(row.system, [*row.prompt, row.chosen], row.tools)
    _, rejected = encoder.oneturn(row.system, [*row.prompt, row.rejected], row.tools)
    chosen_ids, rejected_ids = list(chosen.ids), list(rejected.ids)
    if encoder.template.efficient_eos and eos_id is not None:
        chosen_ids.append(eos_id)
        rejected_ids.append(eos_id)
    source_len, target_len = infer_seqlen(len(prompt.ids), max(len(chosen_ids), len(rejected_ids)),
                                          encoder.settings.cutoff_len)
    prompt_ids = prompt.ids[:source_len]
    ends = [end for _, end in prompt.offsets[:source_len]]
    prompt_text = prompt.text if source_len == len(prompt.ids) or not any(ends) else prompt.text[: max(ends, default=0)]
    sides = []
    for ids, message in ((chosen_ids, row.chosen), (rejected_ids, row.rejected)):
        reply = ids[:target_len]
        sides.append(EncodedSide(prompt_ids + reply, [IGNORE_INDEX] * source_len + reply, source_len, len(prompt.ids),
                                 ids, prompt_text, message.content))
    return sides[0], sides[1]


# --- the feedback processor (stage kto): one reply, its kto_tag the label ---------------------------------------

def feedback_row(row: dict[str, Any]) -> tuple[RankedRow, bool]:
    """A KTO row (``messages`` or ``conversations`` ending with the reply, and a boolean ``label``, the kto_tag
    column of LLaMA-Factory's own kto_en_demo) as the converter reads it: (the row with the reply as ``chosen``,
    the label); raises InvalidRow where the converter or the processor drops it."""
    label = row.get("label")
    if not isinstance(label, bool):
        raise ValueError(f"label is {label!r}, not true/false: LLaMA-Factory's converter reads the row as no KTO example")
    turns = row.get("messages", row.get("conversations"))
    if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
        raise ValueError("no messages (or conversations) list of turns")
    tools = row.get("tools")
    tools = json.loads(tools) if isinstance(tools, str) and tools else (tools or None)
    if turns and "from" in turns[0]:
        system = row.get("system") or ""
        if turns[0].get("from") == "system":
            system, turns = turns[0].get("value", ""), turns[1:]
        messages = _sharegpt_turns(turns)
        if len(messages) % 2:
            raise InvalidRow(f"{len(messages)} turns, an odd count: LLaMA-Factory drops the row (Invalid message count)")
    else:
        system, messages = lf_messages(turns)
    if not messages:
        raise InvalidRow("no turns: LLaMA-Factory drops the row")
    return RankedRow(system, messages[:-1], messages[-1], messages[-1], tools), label


def feedback(encoder: Encoder, row: RankedRow, label: bool, eos_id: int | None) -> EncodedSide:
    """FeedbackDatasetProcessor: the row encoded in one turn (prompt, reply), EOS appended for efficient_eos
    templates, prompt and reply sharing cutoff_len by infer_seqlen (the end of a long prompt is cut); it drops no
    row for its length."""
    prompt, reply = encoder.oneturn(row.system, [*row.prompt, row.chosen], row.tools)
    reply_ids = list(reply.ids) + ([eos_id] if encoder.template.efficient_eos and eos_id is not None else [])
    source_len, target_len = infer_seqlen(len(prompt.ids), len(reply_ids), encoder.settings.cutoff_len)
    ends = [end for _, end in prompt.offsets[:source_len]]
    prompt_text = prompt.text if source_len == len(prompt.ids) or not any(ends) else prompt.text[: max(ends, default=0)]
    kept = reply_ids[:target_len]
    return EncodedSide(prompt.ids[:source_len] + kept, [IGNORE_INDEX] * source_len + kept, source_len, len(prompt.ids),
                       reply_ids, prompt_text, row.chosen.content, label)
