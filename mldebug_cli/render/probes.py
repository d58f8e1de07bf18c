"""The probe conversations check-template renders through both sides, and reading a ``--messages`` file.

Each probe isolates one way two templates can disagree: a default system prompt (``user`` has no system
message), system handling, history turns, the generation prompt (on and off), whitespace in content,
special-token text inside content, and a tool call. Contents are distinct sentences so that they can be
located in a render (``content_spans``), which is how a difference is placed relative to the messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import long_number_message, read_text

SYSTEM = "Answer in one short sentence."
QUESTION = "What is the capital of France?"
ANSWER = "The capital of France is Paris."
FOLLOW_UP = "And the capital of Italy?"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name"}},
            "required": ["city"],
        },
    },
}
# A tool-call id every template accepts: Mistral's templates require 9 alphanumeric characters (they raise
# "Tool call IDs should be alphanumeric strings with length 9" otherwise, and the probe was skipped).
TOOL_CALL_ID = "call12345"
_TOOL_CALL = {"id": TOOL_CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}


@dataclass(frozen=True)
class Probe:
    name: str
    messages: tuple[Mapping[str, Any], ...]
    add_generation_prompt: bool
    purpose: str
    tools: tuple[Mapping[str, Any], ...] = ()

    @property
    def has_system(self) -> bool:
        return bool(self.messages) and self.messages[0].get("role") == "system"

    def message_list(self) -> list[dict[str, Any]]:
        """Fresh copies: renderers may rewrite what they are given."""
        return json.loads(json.dumps(list(self.messages)))


def builtin_probes(special_text: str | None) -> tuple[Probe, ...]:
    """The built-in probes; ``special_text`` (e.g. the train EOS text) goes inside user content."""
    user = {"role": "user", "content": QUESTION}
    answer = {"role": "assistant", "content": ANSWER}
    special = special_text or "<|endoftext|>"
    return (
        Probe("user", (user,), True, "a user message alone: shows a default system prompt and the generation prompt"),
        Probe("system+user", ({"role": "system", "content": SYSTEM}, user), True, "how a system message is placed"),
        Probe("multi-turn", (user, answer, {"role": "user", "content": FOLLOW_UP}), True, "history turns"),
        Probe("assistant-last", (user, answer), False, "a full training conversation, closed by the end-of-turn"),
        Probe("generation-prompt-off", (user,), False, "the same user message without the generation prompt"),
        Probe(
            "whitespace",
            (
                {"role": "user", "content": "  What is 2 + 2?\n"},
                {"role": "assistant", "content": "\n4 \n"},
                {"role": "user", "content": "And 3 + 3?  "},
            ),
            True,
            "leading and trailing whitespace in content (trimmed by some templates)",
        ),
        Probe(
            "special-token-text",
            ({"role": "user", "content": f"Repeat this exactly: {special}"},),
            True,
            "special-token text inside content (parsed as a special token or not)",
        ),
        Probe(
            "tool-call",
            (
                {"role": "user", "content": "What is the weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [_TOOL_CALL]},
                {"role": "tool", "tool_call_id": TOOL_CALL_ID, "name": "get_weather", "content": '{"temperature": 22}'},
            ),
            True,
            "a tool call and its result",
            (WEATHER_TOOL,),
        ),
    )


IMAGE = {"type": "image"}


def image_probes() -> tuple[Probe, ...]:
    """Image conversations in the training shape (TRL's content parts): the image before the text, after it, two
    images, and a trained exchange."""
    def user(*parts: Mapping[str, Any]) -> Mapping[str, Any]:
        return {"role": "user", "content": list(parts)}

    question = {"type": "text", "text": "What is in the picture?"}
    return (
        Probe("image-first", (user(IMAGE, question),), True, "an image before the question"),
        Probe("image-last", (user(question, IMAGE),), True, "an image after the question"),
        Probe("two-images", (user(IMAGE, question, IMAGE),), True, "two images around the question"),
        Probe("image-answer", (user(IMAGE, question), {"role": "assistant", "content": "A red ball."}), False,
              "a trained exchange about an image"),
    )


def image_count(messages: Sequence[Mapping[str, Any]]) -> int:
    """The image parts of a conversation's contents."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if isinstance(p, Mapping) and p.get("type") == "image")


def without_images(probe: Probe) -> Probe:
    """The same conversation with its image parts left out."""
    messages = tuple({**m, "content": [p for p in m["content"] if not (isinstance(p, Mapping) and p.get("type") ==
                                                                      "image")]}
                     if isinstance(m.get("content"), list) else m for m in probe.messages)
    return Probe(f"{probe.name} (no images)", messages, probe.add_generation_prompt, probe.purpose, probe.tools)


@dataclass(frozen=True)
class Conversation:
    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...] = ()

    def as_probe(self, name: str = "messages") -> Probe:
        """A conversation ending with an assistant message is compared as training sees it (no generation prompt)."""
        ends_with_reply = bool(self.messages) and self.messages[-1].get("role") == "assistant"
        return Probe(name, self.messages, not ends_with_reply, "the conversation given with --messages", self.tools)


def read_conversation(path: str) -> Conversation:
    """``--messages FILE``: a JSON list of messages, or an object with ``messages`` (and optional ``tools``)."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read it: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: the JSON is nested too deeply to read") from None
    except ValueError as exc:  # an integer over Python's digit limit
        raise InputError(f"{path}: {long_number_message(text, exc)}") from None
    if "\\ud" in text.lower():  # an escaped lone UTF-16 surrogate: not Unicode text, no tokenizer encodes it
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            lone = ord(exc.object[exc.start])
            raise InputError(f"{path}: holds a lone surrogate \\u{lone:04x}, which is not Unicode text (no tokenizer "
                             "takes it)") from None
    tools: Any = ()
    if isinstance(data, Mapping):
        tools = data.get("tools") or ()
        data = data.get("messages")
    if not isinstance(data, list) or not data:
        raise InputError(f"{path}: expected a JSON list of messages or an object with \"messages\"")
    if not isinstance(tools, Sequence) or not all(isinstance(t, Mapping) for t in tools):
        raise InputError(f"{path}: \"tools\" must be a list of objects")
    for index, message in enumerate(data):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise InputError(f"{path}: message {index} must be an object with a string \"role\"")
    return Conversation(tuple(data), tuple(tools))


def content_spans(text: str, messages: Sequence[Mapping[str, Any]]) -> tuple[tuple[int, int, int], ...]:
    """(start, end, message index) of each message's text content found in order in ``text``.

    A content a template rewrote (trimmed, merged) is searched for trimmed; one not found is left out.
    """
    spans: list[tuple[int, int, int]] = []
    cursor = 0
    for index, message in enumerate(messages):
        content = message.get("content")
        if not isinstance(content, str) or not content.strip():
            continue
        for needle in (content, content.strip()):
            at = text.find(needle, cursor)
            if at >= 0:
                spans.append((at, at + len(needle), index))
                cursor = at + len(needle)
                break
    return tuple(spans)
