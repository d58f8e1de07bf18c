"""Text and token diffs between the train and deploy renderings of a probe, and what each difference is.

Text is diffed over lexemes (special-token-like tags such as ``<|im_end|>`` or ``[INST]``, words, single
newlines, runs of spaces, punctuation), so a hunk never splits a tag. Each hunk gets one class, by the
first rule that matches:

1. ``whitespace``: at the start, past a leading BOS text, they differ only by whitespace (``<s>[INST]`` vs
   ``[INST]·``: the runtime adds the BOS as an id, the space after ``[INST]`` is the real difference);
   ``bos-eos``: the two sides differ only by BOS/EOS texts;
2. ``whitespace``: they differ only by whitespace;
3. ``date``: the hunk touches a date;
4. by position relative to the messages' contents (found in both renders):
   ``generation-prompt`` (after the last message, past where the prompt ends without the generation
   prompt), ``system-block`` (before the first content when a system block is or could be there, or
   right after a system message), ``other`` (inside a content, or around a tool call), else
   ``role-marker`` (headers and end-of-turn markup between messages).

Which check reports a hunk (the rule that keeps one difference from being reported twice) lives in
``TemplateComparison``: a probe whose token ids are identical reports nothing; a fallback template
(CT009) explains every hunk; ``system-block`` hunks in probes without a system message belong to CT006
when the default system prompts differ; ``generation-prompt`` hunks to CT007 when the ``user`` probe
shows one; ``date`` hunks to CT012 when both sides print a date; a probe whose hunks are all whitespace
to CT008; ``bos-eos`` hunks to CT003/CT004 when the probe's leading BOS ids differ, and nowhere when the
runtime adds the missing BOS/EOS as an id. CT001 reports what is left.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.sections.probes import HunkView, ProbeView, TokenDifferenceView
from mldebug_cli.render.probes import Probe
from mldebug_cli.sources.deploy import Side

HUNK_CLASSES = ("bos-eos", "system-block", "generation-prompt", "role-marker", "whitespace", "date", "other")
MAX_TOKENS_SHOWN = 8

_LEXEME = re.compile(r"<[^<>\s]{1,64}>|\[[A-Za-z_/]{1,32}\]|\w+|\n|[^\S\n]+|.", re.DOTALL)
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_DATE = re.compile(
    rf"\b\d{{1,2}}[ -]{_MONTH}[ ,-]*\d{{4}}\b|\b{_MONTH} \d{{1,2}},? \d{{4}}\b|\b{_MONTH} \d{{4}}\b|\b\d{{4}}-\d{{2}}-\d{{2}}\b"
)


@dataclass(frozen=True)
class Hunk:
    kind: str
    train_start: int
    train_end: int
    deploy_start: int
    deploy_end: int
    train_text: str
    deploy_text: str

    def view(self) -> HunkView:
        return HunkView(self.kind, self.train_start, self.deploy_start, self.train_text, self.deploy_text)

    def as_dict(self) -> dict[str, Any]:
        return self.view().as_dict()


@dataclass(frozen=True)
class TokenHunk:
    """One differing stretch of token ids, as ``id:piece`` on each side."""

    train_at: int
    deploy_at: int
    train: tuple[str, ...]
    deploy: tuple[str, ...]

    def view(self) -> TokenDifferenceView:
        return TokenDifferenceView(self.train_at, self.deploy_at, tuple(self.train), tuple(self.deploy))

    def as_dict(self) -> dict[str, Any]:
        return self.view().as_dict()


@dataclass(frozen=True)
class HunkContext:
    """Where a probe's messages sit in each render, for placing a hunk."""

    messages: tuple[Mapping[str, Any], ...]
    add_generation_prompt: bool
    train_spans: tuple[tuple[int, int, int], ...]
    deploy_spans: tuple[tuple[int, int, int], ...]
    train_generation_start: int | None  # where the generation prompt begins in the train render
    deploy_generation_start: int | None
    markers: tuple[str, ...]  # BOS/EOS texts of both sides
    default_system_block: bool  # either side writes a system block when no system message is given
    tool_names: tuple[str, ...] = ()  # the probe's tool function names


# ------------------------------------------------------------------------------------------ text


def text_hunks(train: str, deploy: str, context: HunkContext) -> tuple[Hunk, ...]:
    """The differences between two renders, each classified."""
    a_cuts, b_cuts = _lexemes(train), _lexemes(deploy)
    a_lex, b_lex = [train[s:e] for s, e in a_cuts], [deploy[s:e] for s, e in b_cuts]
    matcher = difflib.SequenceMatcher(None, a_lex, b_lex, autojunk=False)
    raw = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    merged = _merge_across_single_gaps(raw, a_lex)
    hunks = []
    for i1, i2, j1, j2 in merged:
        t0, t1 = _char_range(a_cuts, i1, i2, len(train))
        d0, d1 = _char_range(b_cuts, j1, j2, len(deploy))
        hunk = Hunk("other", t0, t1, d0, d1, train[t0:t1], deploy[d0:d1])
        hunks.append(Hunk(classify(hunk, train, deploy, context), t0, t1, d0, d1, hunk.train_text, hunk.deploy_text))
    return tuple(hunks)


def _lexemes(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _LEXEME.finditer(text)]


def _char_range(cuts: list[tuple[int, int]], first: int, last: int, length: int) -> tuple[int, int]:
    if first < last:
        return cuts[first][0], cuts[last - 1][1]
    at = cuts[first][0] if first < len(cuts) else length
    return at, at


def _merge_across_single_gaps(ops: Sequence[tuple[str, int, int, int, int]], a_lex: list[str]) -> list[tuple[int, int, int, int]]:
    """Join two hunks separated by one space or punctuation lexeme ("26 Jul 2024" vs "15 Jan 2025" is one hunk)."""
    merged: list[list[int]] = []
    for _, i1, i2, j1, j2 in ops:
        if merged:
            last = merged[-1]
            gap = a_lex[last[1] : i1]
            if len(gap) == 1 and gap[0] != "\n" and not gap[0].isalnum():
                last[1], last[3] = i2, j2
                continue
        merged.append([i1, i2, j1, j2])
    return [(a, b, c, d) for a, b, c, d in merged]


def classify(hunk: Hunk, train: str, deploy: str, context: HunkContext) -> str:
    a, b = hunk.train_text, hunk.deploy_text
    if _whitespace_after_leading_marker(hunk, context.markers):
        return "whitespace"
    if _differ_only_by(a, b, context.markers):
        return "bos-eos"
    if _squash(a) == _squash(b):
        return "whitespace"
    if _touches_date(train, hunk.train_start, hunk.train_end) or _touches_date(deploy, hunk.deploy_start, hunk.deploy_end):
        return "date"
    return _by_position(hunk, context)


def _whitespace_after_leading_marker(hunk: Hunk, markers: tuple[str, ...]) -> bool:
    """``<s>[INST]`` vs ``[INST]·`` at the start: the BOS text is the runtime's to add (as an id); what differs in
    the text is the whitespace around the marker that follows it."""
    a, b = hunk.train_text, hunk.deploy_text
    if hunk.train_start == 0:
        a = _without_leading(a, markers)
    if hunk.deploy_start == 0:
        b = _without_leading(b, markers)
    if (a, b) == (hunk.train_text, hunk.deploy_text):
        return False
    return a != b and _squash(a) == _squash(b)


def _without_leading(text: str, markers: tuple[str, ...]) -> str:
    for marker in sorted((m for m in markers if m), key=len, reverse=True):
        if text.startswith(marker):
            return text[len(marker):]
    return text


def _differ_only_by(a: str, b: str, markers: tuple[str, ...]) -> bool:
    found = [m for m in markers if m and (m in a or m in b)]
    if not found:
        return False
    for marker in sorted(found, key=len, reverse=True):
        a, b = a.replace(marker, ""), b.replace(marker, "")
    return _squash(a) == _squash(b)


def _squash(text: str) -> str:
    return "".join(text.split())


def _touches_date(text: str, start: int, end: int) -> bool:
    end = max(end, start + 1)
    return any(m.start() < end and m.end() > start for m in _DATE.finditer(text))


def _by_position(hunk: Hunk, context: HunkContext) -> str:
    spans, start, end = context.train_spans, hunk.train_start, hunk.train_end
    if any(s < end and e > start or s < start < e for s, e, _ in spans):
        return "other"  # the content itself differs (merged, rewritten or dropped)
    before = [index for s, e, index in spans if e <= start]
    after = [index for s, e, index in spans if s >= end]
    previous, following = (before[-1] if before else None), (after[0] if after else None)
    roles = [m.get("role") for m in context.messages]
    if _mentions_tool(hunk, context.tool_names):
        return "other"  # tool definitions and calls
    if following is None and context.add_generation_prompt and _in_generation_prompt(hunk, context):
        return "generation-prompt"
    if previous is None:
        return "system-block" if roles[0] == "system" or context.default_system_block else "role-marker"
    if roles[previous] == "system":
        return "system-block"
    between = context.messages[previous : (following + 1) if following is not None else len(roles)]
    if any(m.get("tool_calls") or m.get("role") == "tool" for m in between):
        return "other"
    return "role-marker"


def _mentions_tool(hunk: Hunk, names: tuple[str, ...]) -> bool:
    return any(name in hunk.train_text or name in hunk.deploy_text for name in names)


def _in_generation_prompt(hunk: Hunk, context: HunkContext) -> bool:
    train_at, deploy_at = context.train_generation_start, context.deploy_generation_start
    return (train_at is not None and hunk.train_start >= train_at) or (
        deploy_at is not None and hunk.deploy_start >= deploy_at
    )


def generation_prompt(with_prompt: str, without_prompt: str) -> str | None:
    """What add_generation_prompt appends, when the render without it is a prefix of the render with it."""
    return with_prompt[len(without_prompt) :] if with_prompt.startswith(without_prompt) else None


def default_system_prompt(user_only: str, system_and_user: str, system: str, user: str) -> str | None:
    """The system text a template writes when no system message is given; None when it writes no system block.

    The system message's block in ``system_and_user`` is prefix + ``system`` + middle; a template with a
    default writes prefix + default + middle before the same user content.
    """
    at = system_and_user.find(system)
    user_at = system_and_user.find(user, at + len(system)) if at >= 0 else -1
    own_user_at = user_only.find(user)
    if at < 0 or user_at < 0 or own_user_at < 0:
        return None
    prefix, middle = system_and_user[:at], system_and_user[at + len(system) : user_at]
    before_user = user_only[:own_user_at]
    if not before_user.startswith(prefix) or not before_user.endswith(middle) or len(prefix) + len(middle) > len(before_user):
        return None
    return before_user[len(prefix) : len(before_user) - len(middle)]


def window(text: str | None, start: int, end: int, context: int = 20, longest: int = 60) -> str:
    """``text[start:end]`` between ⟨ ⟩ with some context, whitespace visible, quoted; a long middle is cut (a side
    not rendered reads as empty text)."""
    text = text or ""
    head = ("…" if start > context else "") + visible(text[max(0, start - context) : start])
    tail = visible(text[end : end + context]) + ("…" if end + context < len(text) else "")
    middle = text[start:end]
    if len(middle) > longest:
        middle = f"{middle[: longest - 20]}…({len(middle) - longest + 10} more)…{middle[-10:]}"
    return f"\"{head}⟨{visible(middle)}⟩{tail}\""


def visible(text: str) -> str:
    """One line with whitespace visible: newline ↵, tab →, space ·."""
    return text.replace("\n", "↵").replace("\t", "→").replace(" ", "·")


# ----------------------------------------------------------------------------------------- tokens


def token_hunks(train: Sequence[int], deploy: Sequence[int], piece: Callable[[int], str]) -> tuple[TokenHunk, ...]:
    matcher = difflib.SequenceMatcher(None, list(train), list(deploy), autojunk=False)
    return tuple(
        TokenHunk(i1, j1, _pieces(train[i1:i2], piece), _pieces(deploy[j1:j2], piece))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
    )


def _pieces(ids: Sequence[int], piece: Callable[[int], str]) -> tuple[str, ...]:
    shown = [f"{i}:{piece(i)}" for i in ids[:MAX_TOKENS_SHOWN]]
    if len(ids) > MAX_TOKENS_SHOWN:
        shown.append(f"… {len(ids) - MAX_TOKENS_SHOWN} more")
    return tuple(shown)


def leading_count(ids: Sequence[int], wanted: frozenset[int]) -> int:
    count = 0
    while count < len(ids) and ids[count] in wanted:
        count += 1
    return count


# ---------------------------------------------------------------------------------- the subject


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    train_text: str | None = None
    deploy_text: str | None = None
    train_ids: tuple[int, ...] = ()
    deploy_ids: tuple[int, ...] = ()
    hunks: tuple[Hunk, ...] = ()
    token_hunks: tuple[TokenHunk, ...] = ()
    skipped: str | None = None  # why the probe was not compared
    deploy_error: str | None = None  # the deploy side failed to render what the train side rendered

    @property
    def name(self) -> str:
        return self.probe.name

    @property
    def compared(self) -> bool:
        return self.skipped is None and self.deploy_error is None

    @property
    def identical(self) -> bool:
        return self.compared and self.train_ids == self.deploy_ids

    def view(self) -> ProbeView:
        """The probe as check-template's report section shows it."""
        return ProbeView(self.name, self.train_text, self.deploy_text, self.identical, self.skipped, self.deploy_error,
                         tuple(h.view() for h in self.hunks), tuple(t.view() for t in self.token_hunks))

    def as_dict(self) -> dict[str, Any]:
        return self.view().as_dict()


class ImageVerdict:
    """How an image conversation's deploy prompt differs from training's (one of these, or none)."""

    MOVED = "moved"  # the same image markers, placed (or joined to the text) differently: CT014
    MARKER = "marker"  # the prompt marks the images with another string or count: CT015
    DROPPED = "dropped"  # the deploy prompt has no trace of the image parts: CT016


@dataclass(frozen=True)
class ImageProbeResult:
    """One image conversation rendered on both sides, and both rendered again without its image parts."""

    probe: Probe
    images: int  # image parts in the conversation
    marker: str  # the model's image marker: what its processor expands into an image's tokens
    train_text: str | None = None
    deploy_text: str | None = None
    train_bare: str | None = None  # the renders of the conversation without its image parts
    deploy_bare: str | None = None
    skipped: str | None = None
    deploy_error: str | None = None

    @property
    def name(self) -> str:
        return self.probe.name

    @property
    def compared(self) -> bool:
        return self.skipped is None and self.deploy_error is None and self.train_text is not None

    def markers(self, side: str) -> int:
        return ((self.train_text if side == "train" else self.deploy_text) or "").count(self.marker)

    @property
    def verdict(self) -> str | None:
        if not self.compared or self.train_text == self.deploy_text:
            return None
        if self.markers("deploy") != self.images:
            return ImageVerdict.DROPPED if self.deploy_text == self.deploy_bare else ImageVerdict.MARKER
        if self.markers("train") != self.images:
            return ImageVerdict.MARKER
        # the same markers: an image difference only where the conversations without images render alike
        return ImageVerdict.MOVED if self.train_bare == self.deploy_bare else None

    def first_difference(self) -> tuple[int, int, int]:
        """(start, train end, deploy end) of the differing middle of the two prompts."""
        train, deploy = self.train_text or "", self.deploy_text or ""
        start = len(_common_prefix(train, deploy))
        tail = len(_common_prefix(train[start:][::-1], deploy[start:][::-1]))
        return start, len(train) - tail, len(deploy) - tail

    def view(self) -> ProbeView:
        return ProbeView(self.name, self.train_text, self.deploy_text, self.compared and self.train_text ==
                         self.deploy_text, self.skipped, self.deploy_error, (), ())


def _common_prefix(a: str, b: str) -> str:
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return a[:at]


@dataclass(frozen=True)
class TemplateComparison:
    """What the template checks inspect: both sides, every probe's result, and facts learned by rendering."""

    train: Side
    deploy: Side
    results: tuple[ProbeResult, ...]
    train_bos_id: int | None  # the train tokenizer's BOS id
    deploy_bos_id: int | None  # the BOS id the deploy runtime prepends, in the train tokenizer's numbering
    end_of_turn: str | None  # the token text the model was trained to end its turns with
    train_default_system: str | None
    deploy_default_system: str | None
    train_generation_prompt: str | None
    deploy_generation_prompt: str | None
    assistant_header: str | None  # what training put before assistant content
    date_dependent: Mapping[str, bool] = field(default_factory=dict)  # side role -> output depends on the date
    train_special_tokens: Mapping[str, int] = field(default_factory=dict)  # text -> id in the train tokenizer
    image_results: tuple[ImageProbeResult, ...] = ()  # the image conversations (a model folder with a processor)

    def result(self, name: str) -> ProbeResult | None:
        return next((r for r in self.results if r.name == name), None)

    @property
    def differing(self) -> tuple[ProbeResult, ...]:
        return tuple(r for r in self.results if r.compared and not r.identical)

    # --- BOS (CT003/CT004)

    @property
    def _bos_ids(self) -> frozenset[int]:
        return frozenset(i for i in (self.train_bos_id, self.deploy_bos_id) if i is not None)

    def double_bos(self, result: ProbeResult) -> bool:
        return result.compared and leading_count(result.deploy_ids, self._bos_ids) >= 2

    def bos_presence_differs(self, result: ProbeResult) -> bool:
        train_has = leading_count(result.train_ids, self._bos_ids) > 0
        deploy_has = leading_count(result.deploy_ids, self._bos_ids) > 0
        return result.compared and train_has != deploy_has and not self.double_bos(result)

    # --- facts shared by several checks

    @property
    def default_system_differs(self) -> bool:
        return self.train_default_system != self.deploy_default_system

    @property
    def generation_prompt_differs(self) -> bool:
        user = self.result("user")
        return user is not None and any(h.kind == "generation-prompt" for h in user.hunks)

    @property
    def dates_on_both_sides(self) -> bool:
        return bool(self.date_dependent.get("train")) and bool(self.date_dependent.get("deploy"))

    def whitespace_only(self, result: ProbeResult) -> bool:
        hunks = self.text_differences(result)
        return bool(hunks) and all(h.kind == "whitespace" for h in hunks)

    def unexplained_hunks(self, result: ProbeResult) -> tuple[Hunk, ...]:
        """The hunks no more specific check reports (the module docstring gives the rule)."""
        if not result.compared or result.identical or self.deploy.fallback:
            return ()
        if self.whitespace_only(result):
            return ()
        return tuple(h for h in self.text_differences(result) if not self._explained(h, result))

    def text_differences(self, result: ProbeResult) -> tuple[Hunk, ...]:
        """The hunks that change tokens: all but BOS/EOS hunks reported by CT003/CT004 or added back as ids."""
        bos_reported = self.double_bos(result) or self.bos_presence_differs(result)
        return tuple(h for h in result.hunks if not (h.kind == "bos-eos" and (bos_reported or self._added_as_id(h, result))))

    def _added_as_id(self, hunk: Hunk, result: ProbeResult) -> bool:
        """A BOS text missing at the start (or EOS at the end) that the deploy runtime adds as an id instead."""
        at_start = hunk.train_start == 0 and hunk.deploy_start == 0 and self.deploy.adds_bos
        at_end = hunk.train_end == len(result.train_text or "") and hunk.deploy_end == len(result.deploy_text or "")
        return at_start or (at_end and self.deploy.adds_eos)

    def _explained(self, hunk: Hunk, result: ProbeResult) -> bool:
        if hunk.kind == "system-block":
            return not result.probe.has_system and self.default_system_differs
        if hunk.kind == "generation-prompt":
            return self.generation_prompt_differs
        if hunk.kind == "date":
            return self.dates_on_both_sides
        return False
