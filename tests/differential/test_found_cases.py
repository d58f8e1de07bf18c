"""Disagreements the differential harness found, each fixed in mldebug; the expected values are the real framework's
own output on the generated row (TRL 1.16.0's SFTTrainer, LLaMA-Factory 0.9.5, unsloth_zoo 2026.10.9's
train_on_responses_only on SFTTrainer's ids), as the harness recorded it."""

from __future__ import annotations

import json

from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import NEMO, QWEN3, QWEN25


def _rows(tmp_path, rows: list[dict], **options):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    report = build_report(InspectOptions(dataset=str(path), rows=tuple(range(len(rows))), **options))
    return report, {v["row"]: v for v in report.details["rows"]}


def test_trl_trains_the_tokens_a_prompt_and_its_completion_merge_into(tmp_path):
    """SFTTrainer: the completion starts where the tokenized prompt and prompt+completion diverge ("the" + "the" is
    one merged pair of tokens, so nothing is masked)."""
    _, views = _rows(tmp_path, [{"prompt": "the", "completion": "the"}, {"prompt": "the chain", "completion": " is worn"}],
                     tokenizer=str(QWEN3), framework="trl", max_length=32)
    assert (views[0]["input_ids"], views[0]["labels"]) == ([339, 18522, 151645], [339, 18522, 151645])
    assert views[1]["labels"][:2] == [-100, -100] and views[1]["labels"][2:] == views[1]["input_ids"][2:]


def test_trl_keep_end_keeps_the_last_max_length_tokens(tmp_path):
    _, start = _rows(tmp_path, [{"text": " ".join(["chain"] * 40)}], tokenizer=str(QWEN3), framework="trl", max_length=8)
    _, end = _rows(tmp_path, [{"text": " ".join(["chain"] * 40)}], tokenizer=str(QWEN3), framework="trl", max_length=8,
                   truncation_mode="keep_end")
    assert len(end[0]["input_ids"]) == 8 and end[0]["input_ids"][-1] == 151645  # the EOS TRL appended is kept
    assert end[0]["input_ids"] != start[0]["input_ids"]


def test_assistant_only_loss_on_text_rows_is_the_error_trl_raises(tmp_path):
    report, _ = _rows(tmp_path, [{"text": "hello there"}], tokenizer=str(QWEN3), framework="trl", train_on="assistant")
    errors = [f for f in report.findings if f.severity.value == "error"]
    assert errors and errors[0].code == "DS015" and "not conversational" in errors[0].message


def test_an_alpaca_row_with_an_empty_instruction_is_its_input_alone_in_llama_factory(tmp_path):
    from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions

    _, views = _rows(tmp_path, [{"instruction": "", "input": "ok", "output": "3.5"}], tokenizer=str(QWEN25),
                     framework="llama-factory", data_format="alpaca",
                     framework_options=LlamaFactoryOptions(template="chatml", train_on_prompt=True))
    assert "<|im_start|>user\nok<|im_end|>" in views[0]["prompt"]


# unsloth group 11 row 1 (seed 21): Mistral-Nemo, a system message, last_response_only=True
NEMO_SYSTEM_ROW = {"messages": [
    {"role": "system", "content": "\nyes no worn café ok! the\n"}, {"role": "user", "content": "it yes replace {{ x }} the"},
    {"role": "assistant", "content": "yes soon brake ok brake"}, {"role": "user", "content": "ok! no no pads 42 soon"},
    {"role": "assistant", "content": "\nyes\n"}]}
NEMO_IDS = [1, 3, 1276, 14842, 14422, 15783, 2460, 9881, 1278, 4, 13059, 9012, 48710, 5913, 48710, 2, 3, 1662, 1033, 1836,
            1836, 66094, 1032, 1052, 1050, 9012, 4, 1010, 13059, 1010, 2]
NEMO_LAST_LABELS = [-100] * 27 + [1010, 13059, 1010, 2]


def test_unsloths_last_response_only_trains_the_last_response_however_it_is_asked_for(tmp_path):
    """train_on_responses_only(last_response_only=True): the parts' own flag was dropped unless --train-on last."""
    from mldebug_cli.frameworks.unsloth.framework import Flags, ResponseParts

    for parts, train_on in ((ResponseParts("[INST]", "[/INST]", last_response_only=True), None),
                            (ResponseParts("[INST]", "[/INST]"), "last")):
        _, views = _rows(tmp_path, [NEMO_SYSTEM_ROW], tokenizer=str(NEMO), framework="unsloth", framework_flags=Flags(parts),
                         train_on=train_on)
        assert (views[0]["input_ids"], views[0]["labels"]) == (NEMO_IDS, NEMO_LAST_LABELS)


def test_a_trained_eos_is_not_reported_masked_where_the_history_renders_differently_on_its_own(tmp_path):
    """Mistral-Nemo renders the system message with the last user turn, so the prefix before each reply is not a
    prefix of the row's render: the reply's span was cut before its </s>, and DS004 said a trained </s> was masked."""
    from mldebug_cli.frameworks.unsloth.framework import Flags, ResponseParts

    report, views = _rows(tmp_path, [NEMO_SYSTEM_ROW], tokenizer=str(NEMO), framework="unsloth",
                          framework_flags=Flags(ResponseParts("[INST]", "[/INST]")))
    assert views[0]["input_ids"] == NEMO_IDS
    assert [i for i, label in enumerate(views[0]["labels"]) if label == 2] == [15, 30]  # both </s> are trained
    assert "DS004" not in {f.code for f in report.findings}


# --- TRL SFT data settings the trl-sft suite covers (packing, padding_free, max_length None, completion_only_loss):
# the expected ids and labels are what TRL 1.16.0's SFTTrainer and its collator produced for these rows (qwen3)

_CHAIN = [1782, 8781, 374, 23704] + [279, 8781, 374, 23704] * 9 + [220, 151645]  # "the chain is worn " * 10 + EOS
_PROMPT = [1782, 8781, 374] + [279, 8781, 374] * 9 + [220, 23704, 151645]  # "the chain is " * 10 / " worn"
_TRL_ROWS = [{"text": "the chain is worn " * 10}, {"text": "ok"}]
_TRL_PAIRS = [{"prompt": "the chain is " * 10, "completion": " worn"}, {"prompt": "a", "completion": "b"}]


def _trl(tmp_path, rows, max_length=None, **options):
    from mldebug_cli.frameworks.trl.framework import TrlOptions

    return _rows(tmp_path, rows, tokenizer=str(QWEN3), framework="trl", max_length=max_length,
                 framework_options=TrlOptions(**options))


def test_trl_bfd_packing_keeps_each_row_cut_to_max_length_with_its_first_label_masked(tmp_path):
    _, views = _trl(tmp_path, _TRL_ROWS, 32, packing=True)
    assert views[0]["input_ids"] == _CHAIN[:32] and views[0]["labels"] == [-100, *_CHAIN[1:32]]
    assert (views[1]["input_ids"], views[1]["labels"]) == ([562, 151645], [-100, 151645])
    _, pairs = _trl(tmp_path, _TRL_PAIRS, 32, packing=True, packing_strategy="bfd")
    assert pairs[0]["input_ids"] == _PROMPT[:32] and pairs[0]["labels"] == [-100] * 31 + [23704]


def test_trl_packing_drops_no_row_that_truncation_leaves_untrained(tmp_path):
    """Without packing TRL drops a row left with no trained token after the cut; pack_dataset keeps it."""
    rows = [{"prompt": "the chain is " * 12, "completion": " worn"}]
    _, cut = _trl(tmp_path, rows, 32)
    _, packed = _trl(tmp_path, rows, 32, packing=True)
    assert cut[0].get("dropped") and not packed[0].get("dropped")
    assert len(packed[0]["input_ids"]) == 32 and set(packed[0]["labels"]) == {-100}


def test_trl_bfd_split_and_wrapped_packing_cut_nothing(tmp_path):
    _, split = _trl(tmp_path, _TRL_ROWS, 32, packing=True, packing_strategy="bfd_split")
    assert split[0]["input_ids"] == _CHAIN
    assert split[0]["labels"] == [-100, *_CHAIN[1:32], -100, *_CHAIN[33:]]  # each max_length piece is a packed segment
    _, wrapped = _trl(tmp_path, _TRL_ROWS, 32, packing=True, packing_strategy="wrapped")
    assert (wrapped[0]["input_ids"], wrapped[0]["labels"]) == (_CHAIN, _CHAIN)
    assert (wrapped[1]["input_ids"], wrapped[1]["labels"]) == ([562, 151645], [562, 151645])
    _, pairs = _trl(tmp_path, _TRL_PAIRS, 32, packing=True, packing_strategy="wrapped")
    assert (pairs[0]["input_ids"], pairs[0]["labels"]) == (_PROMPT, [-100] * 31 + [23704, 151645])


def test_trl_max_length_none_cuts_nothing_and_padding_free_masks_the_first_label(tmp_path):
    _, views = _trl(tmp_path, _TRL_ROWS, no_max_length=True)
    _, pairs = _trl(tmp_path, _TRL_PAIRS, no_max_length=True)
    assert views[0]["input_ids"] == _CHAIN and pairs[0]["labels"] == [-100] * 31 + [23704, 151645]
    _, free = _trl(tmp_path, _TRL_ROWS, padding_free=True, no_max_length=True)
    assert (free[0]["input_ids"], free[0]["labels"]) == (_CHAIN, [-100, *_CHAIN[1:]])
    _, free = _trl(tmp_path, _TRL_PAIRS, padding_free=True, no_max_length=True)
    assert (free[1]["input_ids"], free[1]["labels"]) == ([370, 151645], [-100, 151645])


def test_trl_completion_only_loss_false_trains_the_prompt(tmp_path):
    _, views = _trl(tmp_path, _TRL_PAIRS, completion_only_loss=False)
    assert views[0]["input_ids"] == views[0]["labels"] == _PROMPT


def test_trl_settings_sfttrainer_refuses_are_errors(tmp_path):
    """SFTTrainer raises ValueError for padding_free without packing while max_length is set (the default 1024), and
    for packing with max_length None."""
    for options, words in (({"padding_free": True}, "padding_free=True` without packing"),
                           ({"packing": True, "no_max_length": True}, "When packing is enabled")):
        report, _ = _trl(tmp_path, _TRL_ROWS, **options)
        errors = [f for f in report.findings if f.severity.value == "error"]
        assert [f.code for f in errors] == ["DS027"] and words in errors[0].message


def test_a_trl_config_gives_its_packing_padding_free_and_max_length_none(tmp_path):
    from mldebug_cli.frameworks.trl.framework import TrlOptions, read_plan
    from mldebug_cli.sources.config_file import load_config

    path = tmp_path / "sft.yaml"
    path.write_text("model_name_or_path: Qwen/Qwen3-0.6B\ndataset_name: rows.json\npacking: true\n"
                    "packing_strategy: wrapped\npadding_free: true\nmax_length: null\ncompletion_only_loss: false\n")
    plan = read_plan(load_config(str(path)))
    assert plan.framework_options == TrlOptions(completion_only_loss=False, packing=True, packing_strategy="wrapped",
                                                padding_free=True, no_max_length=True)


def test_trl_padding_free_wrapped_packing_is_said_to_be_not_emulated(tmp_path):
    report, _ = _trl(tmp_path, _TRL_ROWS, 32, packing=True, packing_strategy="wrapped", padding_free=True)
    assert [f.code for f in report.findings if f.code == "DS026"] == ["DS026"]


def test_trl_packing_leaves_out_a_row_the_template_renders_empty(tmp_path):
    """Found by the trl-sft suite (group 67, seed 21): Qwen3's template renders no turn of ShareGPT human/gpt rows,
    so the row has no token; pack_dataset drops empty sequences (TRL's prepared dataset has no such row), while
    mldebug showed an empty row that trains."""
    rows = [{"conversations": [{"from": "human", "value": "the"}, {"from": "gpt", "value": "the"}]}]
    _, views = _trl(tmp_path, rows, packing=True)
    assert views[0]["input_ids"] == [] and views[0].get("dropped")
