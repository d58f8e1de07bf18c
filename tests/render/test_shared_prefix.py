"""Tokenizing a text up to its last added token and from there on apart gives the ids of tokenizing it whole."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from mldebug_cli.render.shared_prefix import boundary_pattern, last_boundary
from support import CORPUS, LLAMA3, NEMO, PHI3, QWEN3, QWEN25, needs_corpus

DPO_DEMO = CORPUS / "datasets" / "llama-factory" / "dpo_en_demo.json"


@pytest.mark.parametrize("path", [QWEN25, QWEN3, NEMO, LLAMA3], ids=lambda p: p.name)
def test_the_npm_tokenizers_can_be_cut_after_their_control_tokens(path):
    tok = AutoTokenizer.from_pretrained(str(path))
    pattern = boundary_pattern(tok)
    assert pattern is not None
    text = tok.apply_chat_template([{"role": "user", "content": "Hi there"}, {"role": "assistant", "content": "Hello"}],
                                   tokenize=False)
    span = last_boundary(text, pattern)
    backend = tok.backend_tokenizer
    head = backend.encode(text[: span[1]], add_special_tokens=False).ids
    rest = backend.encode(text[span[1]:], add_special_tokens=False).ids
    assert head[-1] == backend.token_to_id(text[span[0]:span[1]])
    assert head + rest == backend.encode(text, add_special_tokens=False).ids


@needs_corpus
def test_phi3_whose_control_tokens_strip_the_newline_after_them_is_never_cut_there():
    tok = AutoTokenizer.from_pretrained(str(PHI3))
    pattern = boundary_pattern(tok)
    assert pattern is None or not pattern.fullmatch("<|assistant|>")


@needs_corpus
@pytest.mark.parametrize("path", [QWEN25, NEMO, LLAMA3], ids=lambda p: p.name)
def test_every_pair_of_the_real_dpo_demo_has_the_ids_of_a_whole_tokenization(path):
    """chosen/rejected ids from inspect-data (no truncation) == apply_chat_template(prompt + reply) on all 300 pairs."""
    tok = AutoTokenizer.from_pretrained(str(path))
    rows = json.loads(DPO_DEMO.read_text())
    report = build_report(InspectOptions(dataset=str(DPO_DEMO), tokenizer=str(path), rows=tuple(range(len(rows))),
                                         max_length=100_000))
    roles = {"human": "user", "gpt": "assistant", "system": "system"}
    for view, row in zip(report.details["rows"], rows):
        prompt = [{"role": roles[t["from"]], "content": t["value"]} for t in row["conversations"]]
        for side in ("chosen", "rejected"):
            reply = {"role": "assistant", "content": row[side]["value"]}
            whole = tok.apply_chat_template(prompt + [reply], tokenize=True, return_dict=True)["input_ids"]
            assert view[side]["input_ids"] == whole, (view["row"], side)
