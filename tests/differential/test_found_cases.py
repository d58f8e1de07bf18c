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
    from mldebug_cli.frameworks.llama_factory import LlamaFactoryOptions

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
    from mldebug_cli.frameworks.unsloth import ResponseParts

    for parts, train_on in ((ResponseParts("[INST]", "[/INST]", last_response_only=True), None),
                            (ResponseParts("[INST]", "[/INST]"), "last")):
        _, views = _rows(tmp_path, [NEMO_SYSTEM_ROW], tokenizer=str(NEMO), framework="unsloth", unsloth=parts,
                         train_on=train_on)
        assert (views[0]["input_ids"], views[0]["labels"]) == (NEMO_IDS, NEMO_LAST_LABELS)


def test_a_trained_eos_is_not_reported_masked_where_the_history_renders_differently_on_its_own(tmp_path):
    """Mistral-Nemo renders the system message with the last user turn, so the prefix before each reply is not a
    prefix of the row's render: the reply's span was cut before its </s>, and DS004 said a trained </s> was masked."""
    from mldebug_cli.frameworks.unsloth import ResponseParts

    report, views = _rows(tmp_path, [NEMO_SYSTEM_ROW], tokenizer=str(NEMO), framework="unsloth",
                          unsloth=ResponseParts("[INST]", "[/INST]"))
    assert views[0]["input_ids"] == NEMO_IDS
    assert [i for i, label in enumerate(views[0]["labels"]) if label == 2] == [15, 30]  # both </s> are trained
    assert "DS004" not in {f.code for f in report.findings}
