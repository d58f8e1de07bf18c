"""Dataset row formats: detection, and conversion of a row to what the trainer renders.

Formats: ``messages`` (OpenAI/HF chat, with tool_calls, tools, reasoning_content), ``sharegpt``
(``conversations`` of ``from``/``value``), ``alpaca`` (instruction/input/output), ``prompt-completion``
(strings or message lists), ``text`` and ``tokenized`` (``input_ids`` + ``labels``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.registry import Code

ROW_FORMATS = ("messages", "sharegpt", "alpaca", "prompt-completion", "text", "tokenized")

# ShareGPT `from` tags as LLaMA-Factory maps them (axolotl maps the same chat roles): a function_call
# turn is the assistant calling a tool, an observation is the tool's answer.
SHAREGPT_ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "system": "system",
    "function_call": "assistant",
    "observation": "tool",
    "tool": "tool",
}
PREFERENCE_COLUMNS = (("chosen", "rejected"), ("chosen_messages", "rejected_messages"))
CHAT_ROLES = frozenset({"system", "user", "assistant", "tool", "developer", "ipython", "function"})


class RowProblem(Exception):
    """A row that does not fit its format (DS010) or names an unknown role (DS011), with the fix when known."""

    def __init__(self, code: str, message: str, message_index: int | None = None, hint: str | None = None,
                 dropped: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.message_index = message_index
        self.hint = hint
        self.dropped = dropped  # the framework leaves the row out of training and the run goes on


@dataclass(frozen=True)
class Chat:
    messages: list[dict[str, Any]]
    tools: list[Any] | None = None


@dataclass(frozen=True)
class PromptCompletion:
    prompt: str | list[dict[str, Any]]
    completion: str | list[dict[str, Any]]
    tools: list[Any] | None = None

    @property
    def conversational(self) -> bool:
        return isinstance(self.prompt, list)


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Tokens:
    input_ids: list[int]
    labels: list[int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Sample = Chat | PromptCompletion | Text | Tokens


@dataclass(frozen=True)
class Detection:
    row_format: str
    reason: str
    messages_key: str = "messages"


def detect(rows: Iterable[Any], source: str) -> Detection:
    """The format of a dataset from its first readable rows, with the reason it was chosen."""
    for row in rows:
        if isinstance(row, dict) and row:
            return _detect_row(row, source)
    raise InputError(f"{source}: no readable row to detect the format from", hint="pass --data-format")


def _detect_row(row: dict[str, Any], source: str) -> Detection:
    keys = set(row)
    if "input_ids" in keys:
        return Detection("tokenized", "column input_ids")
    preference = next((pair for pair in PREFERENCE_COLUMNS if set(pair) <= keys), None)
    if preference:  # LLaMA-Factory's ranking rows also carry the prompt as conversations: check this first
        raise InputError(
            f"{source}: a preference dataset (columns {'/'.join(preference)}, for DPO/ORPO/KTO), not supervised rows",
            hint="inspect it as the trainer does with --task dpo (or leave --task out)",
        )
    for key in ("messages", "conversations", "conversation"):
        value = row.get(key)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            if "from" in value[0] or "value" in value[0]:
                return Detection("sharegpt", f"column {key} of from/value turns", key)
            return Detection("messages", f"column {key} of role/content messages", key)
    if {"instruction", "output"} <= keys:
        return Detection("alpaca", "columns instruction/output")
    if {"prompt", "completion"} <= keys:
        return Detection("prompt-completion", "columns prompt/completion")
    if "text" in keys:
        return Detection("text", "column text")
    raise InputError(
        f"{source}: cannot tell the row format from the columns {sorted(keys)[:12]}",
        hint=f"pass --data-format ({', '.join(ROW_FORMATS)})",
    )


def to_sample(row: Any, detection: Detection, require_assistant: bool = True) -> Sample:
    """Convert one raw row; raises RowProblem when it does not fit (a conversation without an assistant turn too,
    unless ``require_assistant`` is False: the framework's reading decides then)."""
    if not isinstance(row, dict):
        raise RowProblem(Code.INVALID_MESSAGES, f"row is a JSON {type(row).__name__}, not an object")
    if detection.row_format in _CHAT_CONVERTERS:
        return _CHAT_CONVERTERS[detection.row_format](row, detection, require_assistant)
    return _CONVERTERS[detection.row_format](row, detection)


def _tools(row: dict[str, Any]) -> list[Any] | None:
    tools = row.get("tools")
    if tools in (None, "", []):
        return None
    if isinstance(tools, str):
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError as exc:
            raise RowProblem(Code.INVALID_MESSAGES, f"tools is a string that is not valid JSON ({exc.msg})") from None
    if isinstance(tools, dict):
        tools = [tools]
    if not isinstance(tools, list):
        raise RowProblem(Code.INVALID_MESSAGES, f"tools is a {type(tools).__name__}, expected a list")
    return tools


def _messages(row: dict[str, Any], detection: Detection, require_assistant: bool = True) -> Chat:
    messages = row.get(detection.messages_key)
    if isinstance(messages, list):
        messages = [_typed_parts(m, i) if isinstance(m, dict) else m for i, m in enumerate(messages)]
    return Chat(_validated_messages(messages, detection.messages_key, require_assistant), _tools(row))


def conversation_without_assistant(row: dict[str, Any], key: str) -> Chat | None:
    """A messages row with no assistant turn, read as a trainer that tokenizes the whole conversation reads it (TRL's
    SFTTrainer keeps it and trains every token); None when the row has an assistant turn or is not such a row."""
    messages = row.get(key)
    if not (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)):
        return None
    if any(m.get("role") == "assistant" for m in messages):
        return None
    messages = [_typed_parts(m, i) for i, m in enumerate(messages)]
    return Chat(_validated_messages(messages, key, require_assistant=False), _tools(row))


def conversation_as_given(row: dict[str, Any]) -> Chat | None:
    """A messages row as a trainer that hands the messages to ``apply_chat_template`` unchanged reads it (TRL's
    SFTTrainer; a bare Trainer's user who maps apply_chat_template over the rows): a row with no assistant turn is
    kept and trained, and content parts of any form reach the template unread (most print the list's Python repr,
    some raise); None when no such reading applies (the row format's converter reads the row)."""
    key = next((k for k in ("messages", "conversations", "conversation") if _chat_list(row.get(k))), None)
    if key is None:
        return None
    messages = row[key]
    if any(isinstance(m, dict) and isinstance(m.get("content"), list) for m in messages):
        return Chat(_validated_messages(messages, key, require_assistant=False), _tools(row))
    return conversation_without_assistant(row, key)


def _chat_list(messages: Any) -> bool:
    return isinstance(messages, list) and bool(messages) and isinstance(messages[0], dict) and "role" in messages[0]


def _has_typed_parts(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(p, dict) and "type" in p and "value" in p and "text" not in p for p in content)


def _typed_parts(message: dict[str, Any], index: int) -> dict[str, Any]:
    """A message whose content is LLaMA-Factory's typed parts (``{"type": "text", "value": ...}``, its v1 data format)
    read as its renderers read them: text parts joined into the content; in assistant turns ``reasoning`` parts are
    the reasoning and ``tool_call`` parts (JSON of name and arguments) the tool calls. Any other part type, or one in
    another role, LLaMA-Factory refuses ("Unsupported content type"), and so does this reader (DS010)."""
    content = message.get("content")
    if not _has_typed_parts(message):
        return message
    assert isinstance(content, list)  # _has_typed_parts: a list of typed parts
    allowed = ("text", "reasoning", "tool_call") if message.get("role") == "assistant" else ("text",)
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[Any] = []
    for part in content:
        kind, value = part["type"], part["value"]
        if kind not in allowed or not isinstance(value, str):
            raise RowProblem(Code.INVALID_MESSAGES, f"a {kind!r} content part in a {message.get('role')} message: LLaMA-Factory's "
                             "renderer raises (Unsupported content type)", index)
        if kind == "tool_call":
            try:
                call = json.loads(value)
            except json.JSONDecodeError:
                raise RowProblem(Code.INVALID_MESSAGES, "a tool_call content part that is not JSON: LLaMA-Factory raises (Invalid "
                                 "tool call format)", index) from None
            calls.append({"type": "function", "function": {"name": call.get("name"), "arguments": call.get("arguments", {})}})
        else:
            (text if kind == "text" else reasoning).append(value)
    out = {k: v for k, v in message.items() if k != "content"}
    out["content"] = "".join(text)
    if reasoning:
        out["reasoning_content"] = "".join(reasoning)
    if calls:
        out["tool_calls"] = calls
    return out


def _validated_messages(messages: Any, key: str, require_assistant: bool = True,
                        roles_as_given: bool = False) -> list[dict[str, Any]]:
    """``roles_as_given``: a role no chat template knows goes to the template as it is (axolotl's reader maps the
    roles it is told of and passes the rest through: the template renders or raises on them)."""
    if not isinstance(messages, list):
        raise RowProblem(Code.INVALID_MESSAGES, f"{key} is {_kind(messages)}, expected a list of messages")
    if not messages:
        raise RowProblem(Code.INVALID_MESSAGES, f"{key} is an empty conversation")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RowProblem(Code.INVALID_MESSAGES, f"the message is {_kind(message)}, expected an object", i)
        role = message.get("role")
        if not isinstance(role, str) or not role:
            raise RowProblem(Code.INVALID_MESSAGES, "the message has no role", i)
        if "content" not in message and not message.get("tool_calls"):
            raise RowProblem(Code.INVALID_MESSAGES, f"the {role} message has no content key", i)
        content = message.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise RowProblem(Code.INVALID_MESSAGES, f"the {role} message's content is {_kind(content)}, expected text or a list of parts", i)
        if isinstance(content, list) and not all(isinstance(p, dict) for p in content):
            raise RowProblem(Code.INVALID_MESSAGES, f"the {role} message's content is a list whose parts are not objects", i)
        if content is None and not message.get("tool_calls"):
            raise RowProblem(Code.INVALID_MESSAGES, f"the {role} message's content is null", i)
        out.append(message)
    if not roles_as_given:
        _known_roles(out, key)
    if require_assistant and not any(m["role"] == "assistant" for m in out):
        raise RowProblem(Code.INVALID_MESSAGES, "the conversation has no assistant turn, so nothing would be trained")
    return out


def _known_roles(messages: list[dict[str, Any]], key: str) -> None:
    """ShareGPT tags used as roles, or unknown roles in a conversation without an assistant turn: DS011."""
    tags: dict[str, int] = {}  # unknown role -> its first message
    for i, message in enumerate(messages):
        if message["role"] not in CHAT_ROLES:
            tags.setdefault(message["role"], i)
    sharegpt = {tag: i for tag, i in tags.items() if tag in SHAREGPT_ROLES}
    if sharegpt:
        first = min(sharegpt.values())
        mapping = ", ".join(f"{tag} -> {SHAREGPT_ROLES[tag]}" for tag in sharegpt)
        raise RowProblem(
            Code.UNMAPPED_ROLE, f"message {first} has role {messages[first]['role']!r}: {key} uses ShareGPT role names "
            f"({', '.join(repr(t) for t in sharegpt)}), which chat templates and masking do not know", first,
            hint=f"map the roles: {mapping} (rename them in the file, or read it as ShareGPT: --data-format sharegpt "
                 "with from/value turns; axolotl: roles: {user: [human], assistant: [gpt]})",
        )
    if tags and not any(m["role"] == "assistant" for m in messages):
        role, first = next(iter(tags.items()))
        raise RowProblem(Code.UNMAPPED_ROLE, f"message {first} has role {role!r}, which is not a chat role, and the "
                         "conversation has no assistant turn, so nothing would be trained", first,
                         hint=f"map {role!r} to user, assistant, system or tool")


def _sharegpt(row: dict[str, Any], detection: Detection, require_assistant: bool = True) -> Chat:
    turns = row.get(detection.messages_key)
    if not isinstance(turns, list) or not turns:
        raise RowProblem(Code.INVALID_MESSAGES, f"{detection.messages_key} is {_kind(turns)}, expected a list of turns")
    messages: list[dict[str, Any]] = []
    first = turns[0].get("from") if isinstance(turns[0], dict) else None
    # LLaMA-Factory's converter takes a leading system turn over the system column (the column is then unused)
    if isinstance(row.get("system"), str) and row["system"] and (
            not isinstance(first, str) or SHAREGPT_ROLES.get(first) != "system"):
        messages.append({"role": "system", "content": row["system"]})
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            raise RowProblem(Code.INVALID_MESSAGES, f"the turn is {_kind(turn)}, expected an object", i)
        tag, value = turn.get("from"), turn.get("value")
        if not isinstance(tag, str):
            raise RowProblem(Code.INVALID_MESSAGES, "the turn has no 'from'", i)
        if not isinstance(value, str):
            raise RowProblem(Code.INVALID_MESSAGES, f"the {tag} turn's value is {_kind(value)}, expected text", i)
        role = SHAREGPT_ROLES.get(tag)
        if role is None:
            raise RowProblem(Code.UNMAPPED_ROLE, f"ShareGPT role {tag!r} is not mapped to a chat role", i)
        messages.append(_function_call(value, i) if tag == "function_call" else {"role": role, "content": value})
    return Chat(_validated_messages(messages, detection.messages_key, require_assistant), _tools(row))


def _function_call(value: str, index: int) -> dict[str, Any]:
    """A ShareGPT function_call turn as an assistant message with tool_calls (LLaMA-Factory's convention)."""
    try:
        calls = json.loads(value)
    except json.JSONDecodeError as exc:
        raise RowProblem(Code.INVALID_MESSAGES, f"the function_call turn is not valid JSON ({exc.msg})", index) from None
    calls = calls if isinstance(calls, list) else [calls]
    tool_calls = []
    for call in calls:
        if not isinstance(call, dict) or "name" not in call:
            raise RowProblem(Code.INVALID_MESSAGES, "the function_call turn has no function name", index)
        arguments = call.get("arguments", {})
        tool_calls.append({"type": "function", "function": {"name": call["name"], "arguments": arguments}})
    return {"role": "assistant", "content": "", "tool_calls": tool_calls}


def _alpaca(row: dict[str, Any], detection: Detection) -> Chat:
    instruction, inp, output = row.get("instruction"), row.get("input") or "", row.get("output")
    for name, value in (("instruction", instruction), ("input", inp), ("output", output)):
        if not isinstance(value, str):
            raise RowProblem(Code.INVALID_MESSAGES, f"{name} is {_kind(value)}, expected text")
    messages: list[dict[str, Any]] = []
    if isinstance(row.get("system"), str) and row["system"]:
        messages.append({"role": "system", "content": row["system"]})
    history = row.get("history") or []
    if not isinstance(history, list):
        raise RowProblem(Code.INVALID_MESSAGES, f"history is {_kind(history)}, expected a list of [instruction, response] pairs")
    for pair in history:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise RowProblem(Code.INVALID_MESSAGES, "history must be a list of [instruction, response] pairs of text")
        messages += [{"role": "user", "content": pair[0]}, {"role": "assistant", "content": pair[1]}]
    user = "\n".join(q for q in (instruction, inp) if q)  # LLaMA-Factory's converter: an empty instruction adds no line
    messages += [{"role": "user", "content": user}, {"role": "assistant", "content": output}]
    return Chat(messages)


def _prompt_completion(row: dict[str, Any], detection: Detection) -> PromptCompletion:
    prompt, completion = row.get("prompt"), row.get("completion")
    if isinstance(prompt, str) and isinstance(completion, str):
        return PromptCompletion(prompt, completion)
    if isinstance(prompt, list) and isinstance(completion, list):
        prompt_messages = _validated_messages(prompt, "prompt", require_assistant=False)
        completion_messages = _validated_messages(completion, "completion", require_assistant=True)
        return PromptCompletion(prompt_messages, completion_messages, _tools(row))
    raise RowProblem(
        Code.INVALID_MESSAGES,
        f"prompt is {_kind(prompt)} and completion is {_kind(completion)}: both must be text or both message lists",
    )


def _text(row: dict[str, Any], detection: Detection) -> Text:
    text = row.get("text")
    if not isinstance(text, str):
        raise RowProblem(Code.INVALID_MESSAGES, f"text is {_kind(text)}, expected a string")
    return Text(text)


def _tokenized(row: dict[str, Any], detection: Detection) -> Tokens:
    input_ids, labels = row.get("input_ids"), row.get("labels")
    if not _is_int_list(input_ids):
        raise RowProblem(Code.INVALID_MESSAGES, "input_ids is not a list of integers")
    if labels is not None and not _is_int_list(labels):
        raise RowProblem(Code.INVALID_MESSAGES, "labels is not a list of integers")
    if not input_ids:
        raise RowProblem(Code.INVALID_MESSAGES, "input_ids is empty")
    for position, token_id in enumerate(input_ids):
        if not 0 <= token_id < MAX_TOKEN_ID:
            raise RowProblem(Code.INVALID_MESSAGES, f"input_ids holds {_short_int(token_id)} at position {position}: a token id is "
                             f"from 0 to {MAX_TOKEN_ID - 1:,}")
    for position, label in enumerate(labels or ()):
        if not -MAX_TOKEN_ID <= label < MAX_TOKEN_ID:
            raise RowProblem(Code.INVALID_MESSAGES, f"labels holds {_short_int(label)} at position {position}: a label is a token "
                             "id or -100")
    return Tokens(list(input_ids), None if labels is None else list(labels))


MAX_TOKEN_ID = 2**31  # tokenizers keep ids in 32 bits; the largest vocabularies hold a few hundred thousand


def _short_int(value: int) -> str:
    text = f"{value:,}" if abs(value) < 10**30 else f"an integer of {len(str(abs(value)))} digits"
    return text


def _is_int_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "text" if value else "empty text"
    return {"list": "a list", "dict": "an object", "int": "a number", "float": "a number", "bool": "a boolean"}.get(
        type(value).__name__, type(value).__name__
    )


_CONVERTERS: dict[str, Callable[[dict[str, Any], Detection], Sample]] = {
    "messages": _messages,
    "sharegpt": _sharegpt,
    "alpaca": _alpaca,
    "prompt-completion": _prompt_completion,
    "text": _text,
    "tokenized": _tokenized,
}
# the chat converters, which refuse a conversation without an assistant turn unless told the framework decides
_CHAT_CONVERTERS: dict[str, Callable[[dict[str, Any], Detection, bool], Chat]] = {"messages": _messages,
                                                                                 "sharegpt": _sharegpt}
