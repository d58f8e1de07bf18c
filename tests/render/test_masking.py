"""Assistant masks from two independent methods agree, and history-rewriting templates are located anyway."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from mldebug_cli.render.chat import ChatRenderer
from mldebug_cli.render.labels import labels_from_encoding
from mldebug_cli.render.masking import layout_chat
from mldebug_cli.sources.row_formats import detect, to_sample
from support import ALPACA, GLAIVE, NEMO, PHI3, QWEN3, QWEN25, TRL_TEMPLATES, alpaca_as_messages, needs_corpus


def renderer(folder, template=None):
    tok = AutoTokenizer.from_pretrained(str(folder))
    return tok, ChatRenderer.for_tokenizer(tok, template or tok.chat_template)


def glaive_chats(n):
    rows = json.loads(GLAIVE.read_text())[:n]
    detection = detect(rows, "glaive")
    return [to_sample(r, detection) for r in rows]


@needs_corpus
@pytest.mark.parametrize(("folder", "template"), [(QWEN25, "qwen2_5_training.jinja"), (PHI3, "phi3_training.jinja")])
def test_turn_diff_agrees_with_trl_generation_markers(folder, template):
    """The per-turn prefix-render method and TRL's hand-written {% generation %} templates train the same text.

    TRL's templates also train the newline after the assistant header, which the generation prompt
    ends with; apart from that single character per turn the spans are identical.
    """
    tok, plain = renderer(folder)
    _, marked = renderer(folder, (TRL_TEMPLATES / template).read_text())
    rows = [alpaca_as_messages(r) for r in json.loads(ALPACA.read_text())[:30]]
    rows += [c.messages for c in glaive_chats(40) if not any("tool_calls" in m or m["role"] == "tool" for m in c.messages)]
    assert len(rows) > 40
    for messages in rows:
        diff = layout_chat(plain, messages, None, "assistant", (tok.eos_token,))
        gen = layout_chat(marked, messages, None, "assistant", (tok.eos_token,))
        assert diff.text == gen.text
        assert len(diff.trained_spans) == len([m for m in messages if m["role"] == "assistant"])
        by_diff, by_markers = _chars(diff.trained_spans), _chars(gen.trained_spans)
        assert by_diff <= by_markers
        assert all(diff.text[p] == "\n" and p + 1 in by_diff for p in by_markers - by_diff)


def _chars(spans):
    return {p for s, e in spans for p in range(s, e)}


@needs_corpus
def test_qwen25_trained_tokens_decode_to_the_replies_plus_end_of_turn():
    tok, plain = renderer(QWEN25)
    for chat in glaive_chats(30):
        layout = layout_chat(plain, chat.messages, chat.tools, "assistant", (tok.eos_token,))
        enc = tok.backend_tokenizer.encode(layout.text, add_special_tokens=False)
        labels, straddles = labels_from_encoding(enc, layout.trained_spans)
        assert straddles == []
        pieces = [layout.text[s:e] for s, e in layout.trained_spans]
        replies = [m for m in chat.messages if m["role"] == "assistant"]
        assert len(pieces) == len(replies)
        for piece, reply in zip(pieces, replies):
            assert piece.endswith("<|im_end|>\n")
            if reply["content"]:
                assert piece.startswith(reply["content"])
        assert tok.decode([i for i in labels if i != -100]) == "".join(pieces)


def test_qwen3_history_rewrite_is_flagged_and_still_located():
    tok, plain = renderer(QWEN3)
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": "b"}, {"role": "assistant", "content": "second answer"}]
    layout = layout_chat(plain, messages, None, "assistant", (tok.eos_token,))
    first, second = layout.turns
    assert not first.prefix_preserved and second.prefix_preserved
    assert layout.text[first.start:first.end] == "first answer<|im_end|>\n"
    assert layout.text[second.start:second.end] == "<think>\n\n</think>\n\nsecond answer<|im_end|>\n"


def test_last_only_trains_the_final_reply():
    tok, plain = renderer(QWEN25)
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"},
                {"role": "user", "content": "b"}, {"role": "assistant", "content": "y"}]
    layout = layout_chat(plain, messages, None, "last", ())
    assert [layout.text[s:e] for s, e in layout.trained_spans] == ["y<|im_end|>\n"]


@needs_corpus
@pytest.mark.parametrize("folder", [QWEN25, QWEN3, PHI3, NEMO])
def test_shape_cache_gives_exactly_the_per_turn_result(folder):
    """The one-render fast path and the per-turn renders agree on every row, including rewritten history."""
    from mldebug_cli.render.masking import ShapeCache

    tok, plain = renderer(folder)
    rows = json.loads(ALPACA.read_text())[:40]
    conversations = [alpaca_as_messages(r) for r in rows[:10]]
    for k in range(0, 30, 3):  # multi-turn conversations of 1-3 turns built from real rows
        conversations.append([m for r in rows[k:k + 1 + k % 3] for m in alpaca_as_messages(r)])
    conversations.append([{"role": "system", "content": "Be brief."}] + conversations[-1])
    conversations.append([{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}])
    shapes = ShapeCache(plain, (tok.eos_token,))
    for messages in conversations:
        slow = layout_chat(plain, messages, None, "assistant", (tok.eos_token,))
        fast = layout_chat(plain, messages, None, "assistant", (tok.eos_token,), shapes)
        assert fast == slow
    assert shapes._learned  # the fast path was used
