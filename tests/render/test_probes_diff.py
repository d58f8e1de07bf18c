"""Probe conversations, text/token diffs and hunk classification, on renders of real templates."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from mldebug_cli.core.errors import InputError
from mldebug_cli.render.diff import (
    HunkContext,
    default_system_prompt,
    generation_prompt,
    text_hunks,
    token_hunks,
    visible,
    window,
)
from mldebug_cli.render.probes import ANSWER, QUESTION, SYSTEM, builtin_probes, content_spans, read_conversation
from support import LLAMACPP_TEMPLATES, PHI3, QWEN3, QWEN25, needs_corpus

TEMPLATES = LLAMACPP_TEMPLATES
PROBES = {p.name: p for p in builtin_probes("<|im_end|>")}


@functools.cache
def tokenizer(folder: Path):
    return AutoTokenizer.from_pretrained(str(folder))


def render(tokenizer_dir: Path, messages, add_generation_prompt: bool, template: str | None = None) -> str:
    """transformers' apply_chat_template itself: the renders these tests diff are real ones."""
    return tokenizer(tokenizer_dir).apply_chat_template(list(messages), chat_template=template, tokenize=False,
                                   add_generation_prompt=add_generation_prompt)  # fmt: skip


def context(probe, train: str, deploy: str, **overrides) -> HunkContext:
    values = dict(
        messages=probe.messages,
        add_generation_prompt=probe.add_generation_prompt,
        train_spans=content_spans(train, probe.messages),
        deploy_spans=content_spans(deploy, probe.messages),
        train_generation_start=None,
        deploy_generation_start=None,
        markers=(),
        default_system_block=False,
    )
    values.update(overrides)
    return HunkContext(**values)


def test_builtin_probes_cover_the_issue_list():
    assert list(PROBES) == ["user", "system+user", "multi-turn", "assistant-last", "generation-prompt-off",
                            "whitespace", "special-token-text", "tool-call"]  # fmt: skip
    assert PROBES["user"].add_generation_prompt and not PROBES["generation-prompt-off"].add_generation_prompt
    assert PROBES["system+user"].has_system and not PROBES["user"].has_system
    assert "<|im_end|>" in PROBES["special-token-text"].messages[0]["content"]
    assert PROBES["tool-call"].tools and PROBES["tool-call"].messages[1]["tool_calls"]


@needs_corpus
def test_default_system_prompt_of_real_templates():
    user, system = PROBES["user"].messages, PROBES["system+user"].messages
    qwen25 = default_system_prompt(render(QWEN25, user, True), render(QWEN25, system, True), SYSTEM, QUESTION)
    assert qwen25 == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    assert default_system_prompt(render(QWEN3, user, True), render(QWEN3, system, True), SYSTEM, QUESTION) is None
    llama31 = (TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text()
    empty = default_system_prompt(render(QWEN25, user, True, llama31), render(QWEN25, system, True, llama31), SYSTEM, QUESTION)
    assert empty == ""  # Llama 3.1 always writes its system block (dates), empty of any default text


@needs_corpus
def test_generation_prompt_is_the_suffix_only_when_it_is_one():
    on, off = render(PHI3, PROBES["user"].messages, True), render(PHI3, PROBES["user"].messages, False)
    assert off.endswith("<|endoftext|>")  # Phi-3's template closes with EOS when there is no generation prompt
    assert generation_prompt(on, off) is None
    on, off = render(QWEN25, PROBES["user"].messages, True), render(QWEN25, PROBES["user"].messages, False)
    assert generation_prompt(on, off) == "<|im_start|>assistant\n"


@needs_corpus
def test_content_spans_find_messages_in_order_and_trimmed():
    probe = PROBES["whitespace"]
    llama31 = (TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text()
    text = render(QWEN25, probe.messages, True, llama31)  # Llama 3.1 trims every content
    spans = content_spans(text, probe.messages)
    assert [index for _, _, index in spans] == [0, 1, 2]
    assert [text[s:e] for s, e, _ in spans] == ["What is 2 + 2?", "4", "And 3 + 3?"]


@needs_corpus
def test_chatml_against_phi3_hunks_are_role_markers_and_generation_prompt():
    probe = PROBES["user"]
    train = render(PHI3, probe.messages, True)
    deploy = render(QWEN3, probe.messages, True)  # ChatML without a default system prompt
    off = render(PHI3, probe.messages, False)
    hunks = text_hunks(train, deploy, context(probe, train, deploy, train_generation_start=len(off) - len("<|endoftext|>")))
    assert [(h.train_text, h.deploy_text, h.kind) for h in hunks] == [
        ("<|user|>", "<|im_start|>user", "role-marker"),
        ("<|end|>", "<|im_end|>", "role-marker"),
        ("<|assistant|>", "<|im_start|>assistant", "generation-prompt"),
    ]


def test_default_system_block_and_bos_and_whitespace_classes():
    probe = PROBES["user"]
    train = render(QWEN25, probe.messages, True)
    deploy = "<s>\n" + train.replace("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
                                     "assistant.<|im_end|>\n", "")  # fmt: skip
    hunks = text_hunks(train, deploy, context(probe, train, deploy, markers=("<s>",), default_system_block=True))
    assert [h.kind for h in hunks] == ["system-block"]
    hunks = text_hunks(train, "<s>" + train, context(probe, train, "<s>" + train, markers=("<s>",)))
    assert [(h.kind, h.deploy_text) for h in hunks] == [("bos-eos", "<s>")]
    hunks = text_hunks(train, "\n" + train, context(probe, train, "\n" + train))
    assert [(h.kind, h.train_start, h.deploy_text) for h in hunks] == [("whitespace", 0, "\n")]


@needs_corpus
def test_a_changed_date_is_one_date_hunk():
    probe = PROBES["user"]
    llama31 = (TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja").read_text()
    train = render(QWEN25, probe.messages, True, llama31)
    deploy = train.replace("26 Jul 2024", "15 Jan 2025")
    hunks = text_hunks(train, deploy, context(probe, train, deploy))
    assert [(h.kind, h.train_text, h.deploy_text) for h in hunks] == [("date", "26 Jul 2024", "15 Jan 2025")]


@needs_corpus
def test_system_merged_into_user_is_a_system_block_difference():
    probe = PROBES["system+user"]
    train = render(PHI3, probe.messages, True)
    deploy = f"<|user|>\n{SYSTEM}\n{QUESTION}<|end|>\n<|assistant|>\n"  # llama.cpp's merge, as its tests expect
    hunks = text_hunks(train, deploy, context(probe, train, deploy))
    assert [h.kind for h in hunks] == ["system-block", "system-block"]


def test_token_hunks_show_id_and_piece_on_both_sides():
    tok = tokenizer(QWEN3)
    a = tok.encode(f"<|im_start|>assistant\n{ANSWER}<|im_end|>", add_special_tokens=False)
    b = tok.encode(f"<|im_start|>assistant\n<think>\n\n</think>\n\n{ANSWER}<|im_end|>", add_special_tokens=False)
    (hunk,) = token_hunks(a, b, tok.convert_ids_to_tokens)
    assert hunk.train_at == hunk.deploy_at == 3  # after <|im_start|> assistant \n
    think, end_think = tok.convert_tokens_to_ids("<think>"), tok.convert_tokens_to_ids("</think>")
    assert hunk.train == () and hunk.deploy == (f"{think}:<think>", "271:ĊĊ", f"{end_think}:</think>", "271:ĊĊ")


def test_visible_and_window():
    assert visible("a b\n\tc") == "a·b↵→c"
    assert window("0123456789", 4, 6, context=2) == '"…23⟨45⟩67…"'


def test_read_conversation_forms_and_errors(tmp_path: Path):
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]))
    conversation = read_conversation(str(listed))
    assert len(conversation.messages) == 2 and not conversation.as_probe().add_generation_prompt
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "tools": [PROBES["tool-call"].tools[0]]}))
    assert read_conversation(str(wrapped)).as_probe().add_generation_prompt
    broken = tmp_path / "broken.json"
    broken.write_text('[{"role": "user",\n "content": }]')
    with pytest.raises(InputError, match=r"broken.json:2: not valid JSON"):
        read_conversation(str(broken))
    no_role = tmp_path / "no_role.json"
    no_role.write_text('[{"content": "hi"}]')
    with pytest.raises(InputError, match="message 0 must be an object with a string \"role\""):
        read_conversation(str(no_role))
