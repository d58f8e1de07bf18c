"""axolotl's chat_template masking: the same ids and labels as axolotl 0.19.0 itself, from stored goldens."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer
from typer.testing import CliRunner

from mldebug_cli.cli import app
from mldebug_cli.frameworks.axolotl import chat_template as axolotl
from mldebug_cli.frameworks.axolotl.chat_template import (
    SENTINELS,
    AxolotlConfigError,
    AxolotlLocator,
    AxolotlMasking,
    AxolotlOptions,
    label_tokens,
    trainable_turns,
)
from mldebug_cli.render.chat import ChatRenderer
from mldebug_cli.render.labels import IGNORE_INDEX
from support import FIXTURES, NEMO, PHI3, QWEN3, QWEN25, ROOT, needs_corpus

GOLDENS = FIXTURES / "axolotl-0.19.0"


def user(text):
    return {"role": "user", "content": text}


def reply(text, **extra):
    return {"role": "assistant", "content": text, **extra}


@pytest.mark.parametrize("golden", sorted(GOLDENS.glob("*.*.json")), ids=lambda p: p.stem)
def test_inspect_data_gives_axolotls_own_ids_and_labels(golden):
    """Goldens written by tools/axolotl_goldens.py from axolotl 0.19.0 (see fixtures/README.md)."""
    expected = json.loads(golden.read_text())
    rows = expected["rows"]
    args = ["inspect-data", str(GOLDENS / expected["dataset"]), "-t", str(ROOT / expected["tokenizer"]),
            *expected["inspect_data_flags"], "--rows", f"0-{len(rows) - 1}", "-f", "json"]
    doc = json.loads(CliRunner().invoke(app, args, catch_exceptions=False).stdout)
    got = {r["row"]: r for r in doc["rows"]}
    for want in rows:
        row = got[want["row"]]
        if "error" in want:  # axolotl stops on the template's error; mldebug reports the row
            assert row["input_ids"] == [] and "Tool call IDs" in row["error"]
            assert any(f["code"] == "DS009" and f["location"]["row"] == want["row"] for f in doc["findings"])
            continue
        assert row["input_ids"] == want["input_ids"], f"row {want['row']}"
        assert row["labels"] == want["labels"], f"row {want['row']}"
    assert doc["context"]["train_on"].split(" via ")[1].startswith("axolotl chat_template masking")


def locator(folder, options=AxolotlOptions()):
    tok = AutoTokenizer.from_pretrained(str(folder))
    masking = AxolotlMasking.resolve(options, tok, tok.chat_template)
    return tok, masking, AxolotlLocator(ChatRenderer.for_tokenizer(tok, tok.chat_template), masking)


def trained_text(tok, masking, layout) -> str:
    encoding = tok.backend_tokenizer.encode(layout.text, add_special_tokens=False)
    labels, _, _ = label_tokens(encoding, encoding.ids, layout, masking)
    return tok.decode([i for i in labels if i != IGNORE_INDEX])


def test_qwen_trains_each_reply_and_its_im_end_but_never_the_newline_after_it():
    tok, masking, where = locator(QWEN25)
    layout = where.layout([user("Hi"), reply("Hello!"), user("2+2?"), reply("4")], None)
    assert trained_text(tok, masking, layout) == "Hello!<|im_end|>4<|im_end|>"
    assert [layout.text[t.start:t.end] for t in layout.turns] == ["Hello!", "4"]


@needs_corpus
def test_phi3_trains_only_the_final_eos_unless_end_is_an_eot_token():
    tok, masking, where = locator(PHI3)
    messages = [user("Hi"), reply("Hello!"), user("2+2?"), reply("4")]
    assert trained_text(tok, masking, where.layout(messages, None)) == "Hello!4<|endoftext|>"
    tok, masking, where = locator(PHI3, AxolotlOptions(eot_tokens=("<|end|>",)))
    assert trained_text(tok, masking, where.layout(messages, None)) == "Hello!<|end|>4<|end|><|endoftext|>"


def test_an_empty_turn_trains_nothing_not_even_its_end_token():
    tok, masking, where = locator(QWEN25)
    layout = where.layout([user("Hi"), reply(""), user("2+2?"), reply("4")], None)
    assert trained_text(tok, masking, layout) == "4<|im_end|>"
    assert layout.turns[0].end == layout.turns[0].start


def test_a_tool_call_turn_trains_the_call_the_template_writes_in_place_of_content():
    """axolotl's placeholder turn has no tool_calls, so the whole rendered call differs and is trained."""
    tok, masking, where = locator(QWEN25)
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    messages = [user("Weather?"), reply("", tool_calls=[call]), {"role": "tool", "content": "sunny"}, reply("Sunny.")]
    layout = where.layout(messages, None)
    assert trained_text(tok, masking, layout).startswith('<tool_call>\n{"name": "get_weather"')
    assert [t.located_by for t in layout.turns] == ["placeholders", "placeholders"]


def test_mistral_tokenizers_never_locate_a_leading_system_turn():
    tok, masking, where = locator(NEMO, AxolotlOptions(train_on_inputs=True))
    assert masking.skips_leading_system
    layout = where.layout([{"role": "system", "content": "Be brief."}, user("Hi"), reply("Hello!")], None)
    system, *_ = layout.turns
    assert system.located_by == "skipped-system" and system.end == system.start
    assert "Be brief." not in trained_text(tok, masking, layout)


@pytest.mark.parametrize("content", [SENTINELS[0], SENTINELS[1], "[[dummy", "message]]", "zz"])
def test_content_sharing_a_sentinels_edge_takes_axolotls_own_renders(content):
    """The string-only diff cannot tell these; the renders do, and give the same as axolotl's (even its oddities)."""
    tok, masking, where = locator(QWEN25)
    layout = where.layout([user("Hi"), reply(content), user("Again"), reply("ok")], None)
    first, second = layout.turns
    assert first.located_by == "sentinel-renders" and second.located_by == "placeholders"
    start, end = axolotl._rendered_sentinel_span(where.renderer, [user("Hi"), reply(content), user("Again"), reply("ok")],
                                                   None, layout.text, 1)
    assert (first.start, first.end) == (start, end)


def test_an_empty_turn_followed_by_a_sentinels_first_character_trains_it_as_axolotl_does():
    """Each sentinel's diff is empty, but "[[dummy_message]]"'s sits after the "[" it shares with "[END]":
    their union covers that "[" (axolotl 0.19.0 trains " [" here: checked against it)."""
    tok = AutoTokenizer.from_pretrained(str(QWEN25))
    template = "{% for m in messages %}{{ m.role }}: {{ m.content }}[END]\n{% endfor %}{{ eos_token }}"
    masking = AxolotlMasking.resolve(AxolotlOptions(), tok, template)
    where = AxolotlLocator(ChatRenderer.for_tokenizer(tok, template), masking)
    layout = where.layout([user("hi"), reply(""), user("x"), reply("done")], None)
    empty = layout.turns[0]
    assert layout.text[empty.start:empty.end] == "[" and empty.located_by == "placeholders"
    assert trained_text(tok, masking, layout) == " [ done<|im_end|>"


def test_the_string_diff_equals_the_rendered_diff_where_it_answers():
    tok, masking, where = locator(QWEN3)
    messages = [user("Hi"), reply("[x]"), user("z"), reply("zebra]"), user("q"), reply("  padded  "), user("e"), reply("")]
    layout = where.layout(messages, None)
    for turn in layout.turns:
        assert turn.located_by == "placeholders"
        start, end = axolotl._rendered_sentinel_span(where.renderer, messages, None, layout.text, turn.message_index)
        assert (turn.start, turn.end) == (start, end) if end > start else turn.end == turn.start  # empty: not found


class CountingRenderer(ChatRenderer):
    renders = 0

    def render(self, *args, **kwargs):
        CountingRenderer.renders += 1
        return super().render(*args, **kwargs)


def test_rows_cost_one_render_per_shape_plus_one_each_not_two_per_turn():
    tok = AutoTokenizer.from_pretrained(str(QWEN25))
    where = AxolotlLocator(CountingRenderer(tok.chat_template, dict(tok.special_tokens_map)),
                           AxolotlMasking.resolve(AxolotlOptions(), tok, tok.chat_template))
    long = [m for k in range(20) for m in (user(f"question {k}"), reply(f"answer {k}"))]
    CountingRenderer.renders = 0
    where.layout(long, None)
    assert CountingRenderer.renders == 2  # the row, and its shape's skeleton
    where.layout([m | {"content": m["content"] + "!"} for m in long], None)
    assert CountingRenderer.renders == 3  # same shape: the row only
    where.layout(long, [{"type": "function", "function": {"name": "f", "parameters": {}}}])
    assert CountingRenderer.renders == 5  # tools: a skeleton of its own


def test_a_split_the_anchors_allow_two_ways_is_not_guessed():
    skeleton = axolotl.Skeleton(("<a>", "|", "</a>"), (1, 3))
    assert skeleton.anchored("<a>x|y</a>") == {1: (3, 4), 3: (5, 6)}
    assert skeleton.anchored("<a>x|y|z</a>") is None  # "x" + "y|z" or "x|y" + "z"
    assert skeleton.anchored("<b>x|y</a>") is None


def test_terminators_are_looked_for_within_three_tokens_and_from_minus_one_for_unfound_turns():
    assert axolotl._terminator([5, 6, 7, 8, 9, 10], 1, frozenset({9})) == 4  # 3 tokens on: still found
    assert axolotl._terminator([5, 6, 7, 8, 9, 10], 1, frozenset({10})) is None  # 4 tokens on
    assert axolotl._terminator([5, 6, 8, 7, 8], 1, frozenset({8})) == 2  # the first one
    assert axolotl._terminator([9, 6, 7, 8], -1, frozenset({9})) == 0
    assert axolotl._terminator([9, 6, 7, 9], -1, frozenset({9})) is None  # axolotl looks at ids[-1] first
    assert axolotl._terminator([5, 6, 7, 9], -1, frozenset({9})) is None  # index 3 is 4 away from -1


def test_trainable_turns_follow_roles_inputs_and_the_messages_own_field():
    messages = [{"role": "system", "content": "s"}, user("u"), reply("a", train=False), user("v"), reply("b")]
    assert trainable_turns(messages, AxolotlOptions()) == [False, False, True, False, True]
    assert trainable_turns(messages, AxolotlOptions(message_field_training="train")) == [False, False, False, False, True]
    assert trainable_turns(messages, AxolotlOptions(roles_to_train=("human", "gpt"))) == [False, True, True, True, True]
    assert trainable_turns(messages, AxolotlOptions(train_on_inputs=True)) == [True] * 5
    assert trainable_turns(messages, AxolotlOptions(last_turn_only=True)) == [False, False, False, False, True]


@needs_corpus
def test_settings_axolotl_refuses_and_eot_tokens_it_drops():
    tok = AutoTokenizer.from_pretrained(str(PHI3))
    template = tok.chat_template
    default = AxolotlMasking.resolve(AxolotlOptions(), tok, template)
    assert default.eot_tokens == ("<|endoftext|>",) and default.eot_ids == default.eos_ids == {32000}
    kept = AxolotlMasking.resolve(AxolotlOptions(eot_tokens=("<|end|>", "<|im_end|>")), tok, template)
    assert kept.eot_tokens == ("<|end|>",)  # <|im_end|> is not in Phi-3's template
    with pytest.raises(AxolotlConfigError, match="encoded as"):
        AxolotlMasking.resolve(AxolotlOptions(eot_tokens=("add_generation_prompt",)), tok, template)
    qwen = AutoTokenizer.from_pretrained(str(QWEN25))
    with pytest.raises(AxolotlConfigError, match="differs from train_on_eot"):
        AxolotlMasking.resolve(AxolotlOptions(eot_tokens=("<|im_end|>", "<|im_start|>"), train_on_eot="all"), qwen,
                               qwen.chat_template)
    with pytest.raises(AxolotlConfigError, match="train_on_eos"):
        AxolotlMasking.resolve(AxolotlOptions(train_on_eos="always"), tok, template)
