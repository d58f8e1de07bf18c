"""Where each assistant turn sits in a rendered conversation, and which characters are trained.

Methods, chosen per row:
- ``generation-markers``: the template's ``{% generation %}`` spans (what transformers and TRL use).
- ``turn-diff``: for assistant message i, the text the model generates is
  ``render(messages[:i+1])`` minus ``render(messages[:i], add_generation_prompt=True)``; exact for any
  template that preserves history. Where a template rewrites history (DS014), the turn is located by
  its content in the full render instead, and the turn records that fallback.
- ``all`` / ``completion`` / ``text``: every token, or everything after the prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.render.chat import ChatRenderer, TemplateRenderError

TRAIN_ON = ("assistant", "all", "last", "completion")


@dataclass(frozen=True)
class Turn:
    """An assistant turn: the character span of what the model generates (header excluded)."""

    message_index: int
    start: int
    end: int
    trained: bool
    # how the span was found ("turn-diff", "aligned", "generation-markers", "content-search", "unlocated"):
    # diagnostic only, so two layouts with the same spans compare equal
    located_by: str = field(default="turn-diff", compare=False)
    prefix_preserved: bool = True


@dataclass(frozen=True)
class ChatLayout:
    text: str
    turns: tuple[Turn, ...]
    trained_spans: tuple[tuple[int, int], ...]
    method: str
    prompt_end: int | None = None  # for completion rows: where the prompt text ends


def content_text(content: Any) -> str:
    """Message content as text (list-of-parts content joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def layout_chat(
    renderer: ChatRenderer,
    messages: list[dict[str, Any]],
    tools: list[Any] | None,
    train_on: str,
    end_texts: tuple[str, ...] = (),
    shapes: ShapeCache | None = None,
    turn_end: str | None = None,
) -> ChatLayout:
    """Render a conversation and decide its trained character spans (raises TemplateRenderError).

    With ``shapes``, turn boundaries come from the conversation's shape when the render verifies
    against it (one render per row instead of two per assistant turn); the result is the same.
    """
    if train_on == "all":
        text = renderer.render(messages, tools).text
        return ChatLayout(text, (), ((0, len(text)),) if text else (), "all")
    if renderer.has_generation_markers:
        rendered = renderer.render(messages, tools, with_generation_spans=True)
        turns = _turns_from_markers(rendered.generation_spans, messages, rendered.text)
        method = "generation-markers"
        text = rendered.text
    else:
        text = renderer.render(messages, tools).text
        found = shapes.turns(messages, tools, text) if shapes is not None else None
        turns = found if found is not None else _turns_by_diff(renderer, messages, tools, text, end_texts, turn_end)
        method = "turn-diff"
    if train_on == "last" and turns:
        last = max(t.message_index for t in turns)
        turns = tuple(_with_trained(t, t.message_index == last and t.trained) for t in turns)
    spans = tuple((t.start, t.end) for t in turns if t.trained and t.end > t.start)
    return ChatLayout(text, turns, spans, method)


def layout_completion(
    renderer: ChatRenderer | None,
    prompt: str | list[dict[str, Any]],
    completion: str | list[dict[str, Any]],
    tools: list[Any] | None,
    eos_text: str | None,
) -> ChatLayout:
    """Prompt/completion rows as TRL renders them: everything after the prompt is trained."""
    if isinstance(prompt, str):
        assert isinstance(completion, str)  # TRL refuses a text prompt with a conversational completion
        full = prompt + completion
        if eos_text and not full.endswith(eos_text):
            full += eos_text
        return ChatLayout(full, (), ((len(prompt), len(full)),), "completion", prompt_end=len(prompt))
    assert renderer is not None and not isinstance(completion, str)
    prompt_text = renderer.render(prompt, tools, add_generation_prompt=True).text
    full = renderer.render(prompt + completion, tools).text
    start = len(prompt_text) if full.startswith(prompt_text) else common_prefix(prompt_text, full)
    turn = Turn(len(prompt), start, len(full), True, "completion", full.startswith(prompt_text))
    return ChatLayout(full, (turn,), ((start, len(full)),), "completion", prompt_end=start)


def _with_trained(turn: Turn, trained: bool) -> Turn:
    return Turn(turn.message_index, turn.start, turn.end, trained, turn.located_by, turn.prefix_preserved)


def _turns_from_markers(spans, messages, text: str) -> tuple[Turn, ...]:
    """Pair generation spans with assistant messages in order (templates emit one span per assistant turn)."""
    assistant_indices = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    turns = []
    for n, (start, end) in enumerate(spans):
        index = assistant_indices[n] if n < len(assistant_indices) else assistant_indices[-1] if assistant_indices else -1
        turns.append(Turn(index, start, end, True, "generation-markers"))
    return tuple(turns)


def _turns_by_diff(
    renderer, messages, tools, full: str, end_texts: tuple[str, ...], turn_end: str | None = None
) -> tuple[Turn, ...]:
    assistant = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    befores = {i: renderer.render(messages[:i], tools, add_generation_prompt=True).text if i else "" for i in assistant}
    turns = []
    cursor = 0
    for n, i in enumerate(assistant):
        following = befores[assistant[n + 1]] if n + 1 < len(assistant) else None
        # a turn ends before the next turn's prompt, where that prompt is still a prefix of the full render
        limit = len(following) if following is not None and full.startswith(following) else len(full)
        turn = _locate_turn(renderer, messages, tools, i, befores[i], full, cursor, limit, end_texts, turn_end)
        turns.append(turn)
        if turn.end > turn.start:
            cursor = turn.end
    return tuple(turns)


def _locate_turn(
    renderer, messages, tools, i: int, before: str, full: str, cursor: int, limit: int,
    end_texts: tuple[str, ...], turn_end: str | None,
) -> Turn:
    """Turn i's generated span in ``full``: exact by prefix renders, else aligned, else found by content."""
    through = full if i == len(messages) - 1 else renderer.render(messages[: i + 1], tools).text
    generated = through[len(before):] if through.startswith(before) else None
    if generated is not None and full.startswith(before) and full.startswith(generated, len(before)):
        return Turn(i, len(before), len(before) + len(generated), True)
    start = len(before) if full.startswith(before) and len(before) >= cursor else None
    content = content_text(messages[i].get("content")).strip()
    if generated and start is not None:
        core = _without_end_markers(generated, end_texts)
        skipped, matched = _align(core, full, start, content)
        if matched and content in core[skipped:skipped + matched] and start + matched <= limit:
            preserved = skipped == 0 and matched == len(core)
            located_by = "turn-diff" if preserved else "aligned"
            return Turn(i, start, start + matched, True, located_by, preserved)
    if generated is None and content and content in through:
        # the history before the turn renders differently on its own (Mistral's system message goes with the last
        # user turn): what follows the turn's content when it is the last message is its footer (its EOS)
        generated = through[through.rfind(content):]
    return _by_content(i, content, full, start if start is not None else cursor, limit, generated, turn_end)


def _without_end_markers(generated: str, end_texts: tuple[str, ...]) -> str:
    """The generated turn without the end-of-sequence markers some templates write only at the very end."""
    trimmed = True
    while trimmed:
        trimmed = False
        for marker in end_texts:
            if marker and generated.endswith(marker) and len(generated) > len(marker):
                generated = generated[: -len(marker)]
                trimmed = True
    return generated


def _align(generated: str, full: str, start: int, content: str) -> tuple[int, int]:
    """(characters of ``generated`` skipped, characters then matching ``full`` from ``start``), longest match.

    Templates that rewrite history drop a head of the turn from earlier turns (an empty think block
    written only into the last turn); the rest of the turn still matches. Candidate skips come from
    anchoring the turn's content (or the first characters at ``start``) in both texts.
    """
    window = full[start:start + len(generated)]
    best = (0, common_prefix(generated, window))
    for anchor in (content[:32], window[:8]):
        at_full = window.find(anchor) if anchor else -1
        at = generated.find(anchor) if at_full >= 0 else -1
        while at >= 0:
            skip = at - at_full
            if skip > 0:
                matched = common_prefix(generated[skip:], window)
                if matched > best[1]:
                    best = (skip, matched)
            at = generated.find(anchor, at + 1)
    return best


def _by_content(
    index: int, content: str, full: str, start: int, limit: int, generated: str | None, turn_end: str | None
) -> Turn:
    """Last resort, within [start, limit): the turn's content, else its end-of-turn token, then the footer after it."""
    at = full.find(content, start, limit) if content else -1
    if at >= 0:
        end = at + len(content)
        tail = generated[generated.find(content) + len(content):] if generated and content in generated else ""
    else:
        # the template dropped or rewrote the content: the turn runs to its end-of-turn token
        closing = full.find(turn_end, start, limit) if turn_end else -1
        if closing < 0 or not turn_end:
            return Turn(index, start, start, False, "unlocated", False)
        at, end = start, closing + len(turn_end)
        tail = generated[generated.find(turn_end) + len(turn_end):] if generated and turn_end in generated else ""
    end += common_prefix(tail, full[end:min(limit, end + len(tail))])
    return Turn(index, at, end, True, "content-search", False)


def common_prefix(a: str, b: str, limit: int | None = None) -> int:
    """Length of the common prefix of a and b, at most ``limit``; slices compared in C, halving on a mismatch."""
    n = min(len(a), len(b)) if limit is None else limit
    at, step = 0, 4096
    while at < n:
        step = min(step, n - at)
        if a[at:at + step] == b[at:at + step]:
            at += step
        elif step == 1:
            return at
        else:
            step //= 2
    return n


PLACEHOLDER = "MLDEBUG{}PLACEHOLDER"


class ShapeCache:
    """Turn boundaries per conversation shape (the sequence of roles), learned once on placeholder contents.

    For a row whose messages are plain role/content pairs, the skeleton render with each placeholder
    replaced by the real content must equal the row's real render, character for character; then the
    skeleton's turn boundaries, shifted by the content lengths, are the row's. A template that looks
    at content (strips it, splits think blocks, tests it) fails that equality and the row takes the
    per-turn renders instead.
    """

    def __init__(self, renderer: ChatRenderer, end_texts: tuple[str, ...], turn_end: str | None = None) -> None:
        self.renderer = renderer
        self.end_texts = end_texts
        self.turn_end = turn_end
        self._learned: dict[tuple[str, ...], _ShapeTurns | None] = {}

    def turns(self, messages: list[dict[str, Any]], tools: list[Any] | None, full: str) -> tuple[Turn, ...] | None:
        if tools or not all(plain_message(m) for m in messages):
            return None
        shape = tuple(m["role"] for m in messages)
        if shape not in self._learned:
            self._learned[shape] = self._learn(shape)
        skeleton = self._learned[shape]
        if skeleton is None:
            return None
        return skeleton.turns_for([m["content"] for m in messages], full)

    def _learn(self, shape: tuple[str, ...]) -> _ShapeTurns | None:
        messages = [{"role": role, "content": PLACEHOLDER.format(k)} for k, role in enumerate(shape)]
        every = range(len(shape))
        skeleton = Skeleton.render(self.renderer, messages, None, every, every)
        if skeleton is None or skeleton.order != tuple(every):  # each content once, in message order
            return None
        try:
            turns = _turns_by_diff(self.renderer, messages, None, skeleton.text, self.end_texts, self.turn_end)
        except TemplateRenderError:
            return None
        return _ShapeTurns(skeleton, turns)


def plain_message(message: dict[str, Any]) -> bool:
    """Only a role and text content: a message whose render a placeholder content can stand for."""
    return isinstance(message.get("content"), str) and all(k in ("role", "content") for k in message)


@dataclass(frozen=True)
class _ShapeTurns:
    """A conversation shape's skeleton and the turn boundaries found on it."""

    skeleton: Skeleton
    turns: tuple[Turn, ...]

    def turns_for(self, contents: list[str], full: str) -> tuple[Turn, ...] | None:
        """The row's turns, if ``full`` is the skeleton with each placeholder replaced by the row's content."""
        if self.skeleton.substituted(contents, full, []) is None:
            return None
        shifts, at = [], len(self.skeleton.pieces[0])  # (placeholder end in the skeleton, growth from its content)
        for k, piece in zip(self.skeleton.order, self.skeleton.pieces[1:]):
            width = len(PLACEHOLDER.format(k))
            shifts.append((at + width, len(contents[k]) - width))
            at += width + len(piece)
        moved = lambda x: x + sum(delta for end, delta in shifts if end <= x)  # noqa: E731
        return tuple(
            Turn(t.message_index, moved(t.start), moved(t.end), t.trained, t.located_by, t.prefix_preserved)
            for t in self.turns
        )


@dataclass(frozen=True)
class Skeleton:
    """A render whose placeholders each occur once: the fixed pieces between them, in text order."""

    pieces: tuple[str, ...]  # len(order) + 1 fixed texts around the placeholders
    order: tuple[int, ...]  # message index of each placeholder, in text order

    @property
    def text(self) -> str:
        placeholders = [PLACEHOLDER.format(k) for k in self.order]
        return self.pieces[0] + "".join(p + piece for p, piece in zip(placeholders, self.pieces[1:]))

    @classmethod
    def render(cls, renderer: ChatRenderer, messages, tools, placeholders, required) -> Skeleton | None:
        """The skeleton, if each placeholder occurs at most once and each of ``required`` exactly once."""
        try:
            text = renderer.render(messages, tools).text
        except TemplateRenderError:
            return None
        found = []
        for k in placeholders:
            placeholder = PLACEHOLDER.format(k)
            at = text.find(placeholder)
            if at < 0 and k not in required:
                continue  # the template does not write this content: substitution checks that
            if at < 0 or text.find(placeholder, at + 1) >= 0:
                return None
            found.append((at, k, len(placeholder)))
        found.sort()
        pieces, previous = [], 0
        for at, _, width in found:
            pieces.append(text[previous:at])
            previous = at + width
        pieces.append(text[previous:])
        return cls(tuple(pieces), tuple(k for _, k, _ in found))

    def substituted(self, contents: list[str], text: str, wanted: list[int]) -> dict[int, tuple[int, int]] | None:
        """Each wanted turn's block, if ``text`` is the skeleton with every placeholder replaced by its content."""
        blocks, parts, at = {}, [self.pieces[0]], len(self.pieces[0])
        for k, piece in zip(self.order, self.pieces[1:]):
            blocks[k] = (at, at + len(contents[k]))
            parts += [contents[k], piece]
            at += len(contents[k]) + len(piece)
        if "".join(parts) != text:
            return None
        return {k: blocks[k] for k in wanted}

    def anchored(self, text: str) -> dict[int, tuple[int, int]] | None:
        """Each placeholder's block in ``text``, where the fixed pieces split it one way only.

        Placing each piece at its earliest occurrence gives every piece its lowest possible position,
        placing them from the end at their latest the highest: the split is unique when the two agree.
        """
        head, tail, middle = self.pieces[0], self.pieces[-1], self.pieces[1:-1]
        if not text.startswith(head) or len(text) < len(head) + len(tail) or not text.endswith(tail):
            return None
        end = len(text) - len(tail)
        earliest, at = [], len(head)
        for piece in middle:
            found = text.find(piece, at, end)
            if found < 0:
                return None
            earliest.append(found)
            at = found + len(piece)
        latest, limit = [], end
        for piece in reversed(middle):
            limit = text.rfind(piece, len(head), limit)
            latest.append(limit)
        if earliest != latest[::-1]:
            return None
        starts = [len(head)] + [p + len(piece) for p, piece in zip(earliest, middle)]
        ends = earliest + [end]
        return {k: (start, stop) for k, start, stop in zip(self.order, starts, ends)}
