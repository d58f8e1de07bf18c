"""Every DP check fires on a planted row (our rows in fixtures/trl-1.16.0-preference) and stays quiet on real
preference data (LLaMA-Factory's demo sets, read in place from the shared corpus)."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import CORPUS, FIXTURES, LLAMA3, NEMO, QWEN3, QWEN25, needs_corpus, write_jsonl

ROWS = FIXTURES / "trl-1.16.0-preference"
LLAMA_FACTORY = CORPUS / "datasets" / "llama-factory"


def fired(dataset, tokenizer, code: str, **options) -> dict[int | None, str]:
    """{row: message} for one check's findings."""
    report = build_report(InspectOptions(dataset=str(dataset), tokenizer=str(tokenizer), select=(code,), all_rows=True,
                                         **options))
    return {f.location.row: f.message for f in report.findings if f.code == code}


def test_dp001_identical_chosen_and_rejected():
    assert set(fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP001")) == {3}
    assert set(fired(ROWS / "rows_dpo_text.json", NEMO, "DP001")) == {4}
    assert set(fired(ROWS / "rows_dpo_implicit.json", LLAMA3, "DP001")) == {2}


def test_dp002_empty_reply_on_either_side_and_in_kto():
    hits = fired(ROWS / "rows_dpo_conversational.json", QWEN3, "DP002")
    assert set(hits) == {4} and "rejected" in hits[4]
    assert set(fired(ROWS / "rows_dpo_text.json", QWEN25, "DP002")) == {5}  # "" became the EOS alone
    assert set(fired(ROWS / "rows_kto.json", QWEN25, "DP002")) == {3}


def test_dp003_implicit_prompts_that_are_not_shared():
    hits = fired(ROWS / "rows_dpo_implicit_unshared.json", QWEN25, "DP003")
    assert set(hits) == {1, 2} and "raises for the whole dataset" in hits[1]
    assert set(fired(ROWS / "rows_dpo_implicit_noreply.json", QWEN25, "DP003")) == {1}
    assert fired(ROWS / "rows_dpo_implicit.json", QWEN25, "DP003") == {}


def test_dp004_prompt_reply_boundary_merge():
    text = fired(ROWS / "rows_dpo_text.json", QWEN25, "DP004")
    assert set(text) == {2, 3} and "'.'" in text[2]  # '.' + '"' -> '."', and a trailing space
    assert set(fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP004")) == {8}  # assistant\n + \n
    nemo = fired(ROWS / "rows_dpo_conversational.json", NEMO, "DP004")  # the system message is rendered apart
    assert 1 in nemo and "template renders it differently" in nemo[1]


def test_dp005_rows_the_trainer_drops():
    assert set(fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP005", max_length=48)) == {2, 6}
    assert fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP005") == {}
    assert fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP005", max_length=48, truncation_mode="keep_end") == {}
    assert set(fired(ROWS / "rows_kto.json", QWEN25, "DP005", max_length=48)) == {4}


def test_dp006_one_side_cut_much_more_or_left_without_prompt():
    hits = fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP006", max_length=48)
    assert {5, 7} <= set(hits) and "chosen" in hits[7]
    assert fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP006") == {}
    keep_end = fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP006", max_length=48, truncation_mode="keep_end")
    assert any("keeps none of its" in m for m in keep_end.values())


def test_dp007_eos_doubled_by_a_reply_that_carries_it(tmp_path):
    hits = fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP007")
    assert set(hits) == {5} and "two EOS" in hits[5]  # <|im_end|> typed in the reply, then the template's
    path = write_jsonl(tmp_path / "text.jsonl", [
        {"prompt": "Say hi.", "chosen": " Hi!</s>\n", "rejected": " Bye."},
        {"prompt": "Say hi.", "chosen": " Hi!</s>", "rejected": " Bye."},
    ])
    hits = fired(path, NEMO, "DP007")  # TRL appends </s> after the newline: two of them
    assert set(hits) == {0} and "two EOS" in hits[0]


def test_dp007_leaves_the_header_llama3s_template_opens_after_every_last_turn():
    """The original Llama 3 template ends every conversation with a new assistant header: the template's design,
    the same in every row (issue 21: never a warning), not something a row adds."""
    assert fired(ROWS / "rows_dpo_conversational.json", LLAMA3, "DP007") == {}


def test_dp008_special_token_text_in_a_reply():
    assert set(fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP008")) == {5}
    assert fired(ROWS / "rows_dpo_conversational.json", NEMO, "DP008") == {}  # not a Mistral special token
    assert fired(ROWS / "rows_dpo_text.json", NEMO, "DP008") == {}  # a trailing </s> is the EOS TRL keeps


def test_dp009_length_bias_reports_the_ratio(tmp_path):
    pairs = json.loads((ROWS / "rows_dpo_conversational.json").read_text())
    good = [p for p in pairs if len(p["chosen"][0]["content"]) > 2 * len(p["rejected"][0]["content"]) > 0]
    path = write_jsonl(tmp_path / "biased.jsonl", (good * 10)[:30])
    hits = fired(path, QWEN25, "DP009")
    assert len(hits) == 1 and "length ratio" in next(iter(hits.values()))
    assert fired(ROWS / "rows_dpo_conversational.json", QWEN25, "DP009") == {}  # fewer than 20 pairs


def test_dp010_kto_labels_all_desirable(tmp_path):
    rows = [r for r in json.loads((ROWS / "rows_kto.json").read_text()) if r["label"]]
    assert len(fired(write_jsonl(tmp_path / "kto.jsonl", rows), QWEN25, "DP010")) == 1
    assert fired(ROWS / "rows_kto.json", QWEN25, "DP010") == {}


def test_dp011_grpo_prompt_ending_with_the_answer():
    assert set(fired(ROWS / "rows_grpo.json", QWEN25, "DP011")) == {2}
    assert set(fired(ROWS / "rows_grpo.json", NEMO, "DP011", task="grpo")) == {2}


def test_dp012_reward_columns_missing():
    hits = fired(ROWS / "rows_grpo.json", QWEN25, "DP012", reward_columns=("answer", "solution"))
    assert list(hits.values()) == ["4 row(s) have no 'solution' column for the reward functions (first: row 0)"]
    assert fired(ROWS / "rows_grpo.json", QWEN25, "DP012", reward_columns=("answer",)) == {}


def test_dp013_a_row_of_another_shape(tmp_path):
    rows = json.loads((ROWS / "rows_dpo_text.json").read_text())[:2]
    rows.append({"prompt": "Q?", "chosen": [{"role": "assistant", "content": "A"}], "rejected": "B"})
    rows.append({"prompt": "Q?", "chosen": "A", "rejected": None})
    rows.append({"chosen": " A", "rejected": " B"})  # no prompt while the first row has one
    hits = fired(write_jsonl(tmp_path / "mixed.jsonl", rows), QWEN25, "DP013")
    assert set(hits) == {2, 3, 4} and "first row has one" in hits[4]
    chats = json.loads((ROWS / "rows_dpo_conversational.json").read_text())[:1]
    chats.append({"chosen": chats[0]["chosen"], "rejected": chats[0]["rejected"]})
    assert set(fired(write_jsonl(tmp_path / "chats.jsonl", chats), QWEN25, "DP013")) == {1}


@needs_corpus
@pytest.mark.parametrize("name", ["dpo_en_demo.json", "kto_en_demo.json", "v1_dpo_demo.jsonl"])
@pytest.mark.parametrize("tokenizer", [QWEN25, QWEN3], ids=["qwen2.5", "qwen3"])
def test_real_preference_data_is_clean(name, tokenizer):
    """LLaMA-Factory's demo sets, with a max_length that fits their longest prompts: no DP finding on the pairs; TRL
    itself cannot read those shapes (DP015, once: tests/frameworks/test_trust_claims.py runs its trainers)."""
    report = build_report(InspectOptions(dataset=str(LLAMA_FACTORY / name), tokenizer=str(tokenizer), all_rows=True,
                                         max_length=8192))
    assert [(f.code, f.location.row, f.message) for f in report.findings if f.code != "DP015"] == []
    assert [f.code for f in report.findings if f.code == "DP015"] == ["DP015"]
    assert report.summary["rows_checked"] == report.summary["rows"] > 0


@needs_corpus
def test_real_dpo_data_with_mistral_nemo_loses_its_system_messages():
    """TRL 1.16 + Mistral-Nemo's template: a system message is rendered only with the generation prompt (DP004)."""
    report = build_report(InspectOptions(dataset=str(LLAMA_FACTORY / "dpo_en_demo.json"), tokenizer=str(NEMO),
                                         all_rows=True, max_length=8192, select=("DP004",)))
    rows = json.loads((LLAMA_FACTORY / "dpo_en_demo.json").read_text())
    with_system = {i for i, r in enumerate(rows) if any(t["from"] == "system" for t in r["conversations"])}
    assert with_system and {f.location.row for f in report.findings} == with_system


@needs_corpus
def test_real_dpo_data_reports_its_length_ratio_and_the_rows_dropped_at_the_default_max_length():
    report = build_report(InspectOptions(dataset=str(LLAMA_FACTORY / "dpo_en_demo.json"), tokenizer=str(QWEN25),
                                         all_rows=True, select=("DP005",)))
    assert report.summary["pairs"] == 300 and 0.5 < report.summary["chosen_rejected_length_ratio"] < 1.5
    assert 0 < len(report.findings) < 300

