"""mldebug's torchtune emulation: the goldens of torchtune 0.6.1 itself (fixtures/torchtune-0.6.1/, written by
tools/torchtune_goldens.py on generated rows) are many and messy, and what mldebug does not emulate is refused. The
goldens are replayed row for row by tests/goldens/ (suite torchtune-rows)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from goldens.torchtune import DATASETS, golden

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks.torchtune.data import read_flags
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import QWEN3, TOKENIZERS


def test_goldens_are_many_and_messy():
    """A few hundred cases, refusals among them, every builder's setting; the versions they were made with."""
    cases = refused = 0
    for style in DATASETS:
        doc = golden(style)
        assert doc["torchtune"].startswith("0.6.1")
        for setting in doc["settings"].values():
            cases += len(setting["rows"])
            refused += sum("error" in r for r in setting["rows"])
    assert cases >= 800
    assert 50 < refused < cases // 2


def test_other_tokenizers_are_refused(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}) + "\n")
    options = InspectOptions(dataset=str(rows), tokenizer=str(QWEN3), framework="torchtune")
    with pytest.raises(InputError, match="mldebug emulates torchtune's qwen2_5 tokenizer only"):
        build_report(options)
    with pytest.raises(UsageError, match="mldebug emulates torchtune's qwen2_5 tokenizer only"):
        read_flags({"--torchtune-tokenizer": "torchtune.models.llama3.llama3_tokenizer"})
    assert read_flags({"--torchtune-tokenizer": "qwen2_5"}).tokenizer == "torchtune.models.qwen2_5.qwen2_5_tokenizer"


def test_settings_torchtune_lacks_are_refused(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}) + "\n")
    options = InspectOptions(dataset=str(rows), tokenizer=str(TOKENIZERS / "qwen2.5-instruct"), framework="torchtune")
    with pytest.raises(UsageError, match="--train-on last"):
        build_report(replace(options, train_on="last"))
    with pytest.raises(UsageError, match="--template"):
        build_report(replace(options, template="qwen"))
    with pytest.raises(UsageError, match="reads messages, sharegpt or alpaca rows"):
        build_report(replace(options, data_format="text"))


def test_max_seq_len_masks_the_eos(tmp_path):
    """torchtune's truncate(mask, max_seq_len, True) masks the appended EOS once max_seq_len is set, cut or not."""
    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}) + "\n")
    options = InspectOptions(dataset=str(rows), tokenizer=str(TOKENIZERS / "qwen2.5-instruct"), framework="torchtune",
                             rows=(0,))
    free = build_report(options).details["rows"][0]
    capped = build_report(replace(options, max_length=512)).details["rows"][0]
    assert free["input_ids"] == capped["input_ids"] and free["input_ids"][-1] == 151645
    assert free["labels"][-1] == 151645 and capped["labels"][-1] == -100
