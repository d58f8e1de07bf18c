"""mldebug's torchtune emulation against torchtune 0.6.1 itself (fixtures/torchtune-0.6.1/, written by
tools/torchtune_goldens.py on generated rows): input_ids and labels row for row, and the rows torchtune refuses."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.frameworks.torchtune.data import Flags, read_flags
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import QWEN3, ROOT, TOKENIZERS, first_difference

GOLDENS = ROOT / "fixtures" / "torchtune-0.6.1"
DATASETS = {"openai": ("messages", "chat"), "sharegpt": ("sharegpt", "chat"), "instruct": ("alpaca", "instruct"),
            "alpaca": ("alpaca", "alpaca")}


def _golden(style: str) -> dict:
    with gzip.open(GOLDENS / f"{style}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def _cases():
    for style in DATASETS:
        for setting in _golden(style)["settings"]:
            yield pytest.param(style, setting, id=f"{style}-{setting}")


def inspect_options(style: str, arguments: dict, dataset: str) -> InspectOptions:
    row_format, builder = DATASETS[style]
    train_on = None if "train_on_input" not in arguments else "all" if arguments["train_on_input"] else "assistant"
    return InspectOptions(dataset=dataset, tokenizer=str(TOKENIZERS / "qwen2.5-instruct"), data_format=row_format,
                          framework="torchtune", train_on=train_on, max_length=arguments.get("max_seq_len"),
                          framework_flags=Flags(dataset=builder, system_prompt=arguments.get("new_system_prompt")),
                          show=0, workers=1)


def compare(style: str, setting: str, tmp_path) -> tuple[int, int, list[str]]:
    """(matched rows, rows, first differences) of mldebug against one golden setting."""
    golden = _golden(style)
    rows = tmp_path / f"{style}.jsonl"
    rows.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in golden["rows"]), encoding="utf-8")
    expected = golden["settings"][setting]
    options = inspect_options(style, expected["arguments"], str(rows))
    views = {v["row"]: v for v in build_report(replace(options, rows=tuple(range(len(golden["rows"]))))).details["rows"]}
    matched, problems = 0, []
    for i, want in enumerate(expected["rows"]):
        view = views[i]
        if "mldebug does not emulate image rows" in (view.get("error") or ""):  # refused as not emulated
            same = _has_image(golden["rows"][i])
        elif "error" in want:  # torchtune raises on the row: mldebug names the same exception on it
            same = f"({want['error']}:" in (view.get("error") or "")
        else:
            same = view.get("error") is None and view["input_ids"] == want["input_ids"] and view["labels"] == want["labels"]
        matched += same
        if not same:
            problems.append(f"row {i}: {view.get('error') or first_difference(view, want)} (want {want.get('error')})")
    return matched, len(expected["rows"]), problems


def _has_image(row: dict) -> bool:
    return "image" in row or "image_url" in json.dumps(row)


@pytest.mark.parametrize(("style", "setting"), list(_cases()))
def test_rows_match_torchtune(style, setting, tmp_path):
    matched, total, problems = compare(style, setting, tmp_path)
    assert matched == total, problems[:3]


def test_goldens_are_many_and_messy():
    """A few hundred cases, refusals among them, every builder's setting; the versions they were made with."""
    cases = refused = 0
    for style in DATASETS:
        golden = _golden(style)
        assert golden["torchtune"].startswith("0.6.1")
        for setting in golden["settings"].values():
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
