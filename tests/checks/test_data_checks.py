"""Every DS check fires on a planted defect and stays quiet on the clean counterpart, on real tokenizers and rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mldebug_cli.frameworks.axolotl.chat_template import AxolotlOptions
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import (
    ALPACA,
    GLAIVE,
    NEMO,
    PHI3,
    QWEN3,
    QWEN25,
    TRL_TEMPLATES,
    alpaca_as_messages,
    needs_corpus,
    write_jsonl,
)


def fired(dataset: Path, tokenizer: Path, code: str, **options) -> dict[int | None, str]:
    """{row: message} for the findings of one check."""
    report = build_report(InspectOptions(dataset=str(dataset), tokenizer=str(tokenizer), select=(code,), all_rows=True, **options))
    return {f.location.row: f.message for f in report.findings if f.code == code}


@pytest.fixture
def chats(tmp_path, alpaca_rows):
    """Write message rows built from real alpaca rows; returns a function rows -> path."""
    def make(rows, name="data.jsonl"):
        return write_jsonl(tmp_path / name, [{"messages": r} if isinstance(r, list) else r for r in rows])
    return make


def qwen_ids(text: str, special: bool = False) -> list[int]:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(QWEN25))(text, add_special_tokens=special).input_ids


@needs_corpus
def test_ds001_fires_when_truncation_cuts_every_trained_token(chats, alpaca_rows):
    path = chats([alpaca_as_messages(r) for r in alpaca_rows[:3]])
    hits = fired(path, QWEN25, "DS001", train_on="assistant", max_length=20)
    assert set(hits) == {0, 1, 2}
    assert "truncation to 20 tokens removed all" in hits[0]
    assert fired(path, QWEN25, "DS001", train_on="assistant") == {}
    assert fired(path, QWEN25, "DS001", train_on="assistant", framework="axolotl", max_length=20) == {}  # dropped instead


def test_ds001_fires_on_pretokenized_rows_whose_labels_are_all_masked(tmp_path):
    ids = qwen_ids("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n")
    path = write_jsonl(tmp_path / "tok.jsonl", [{"input_ids": ids, "labels": [-100] * len(ids)}, {"input_ids": ids, "labels": ids}])
    assert set(fired(path, QWEN25, "DS001")) == {0}


def test_ds002_double_bos_from_pre_rendered_mistral_text(tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(NEMO))
    rendered = tok.apply_chat_template([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], tokenize=False)
    assert rendered.startswith("<s>")
    path = write_jsonl(tmp_path / "text.jsonl", [{"text": rendered}, {"text": rendered[len("<s>"):]}])
    assert set(fired(path, NEMO, "DS002")) == {0}


def test_ds003_missing_bos_on_pretokenized_rows(tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(NEMO))
    with_bos, without = tok("Hello there</s>").input_ids, tok("Hello there</s>", add_special_tokens=False).input_ids
    path = write_jsonl(tmp_path / "tok.jsonl", [{"input_ids": with_bos}, {"input_ids": without}])
    assert set(fired(path, NEMO, "DS003")) == {1}
    assert fired(path, QWEN25, "DS003") == {}  # Qwen has no BOS at all


def test_ds004_end_of_turn_masked_in_pretokenized_labels(tmp_path):
    prompt = qwen_ids("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    answer, end = qwen_ids("hello"), qwen_ids("<|im_end|>\n")
    ids = prompt + answer + end
    good = [-100] * len(prompt) + answer + end
    bad = [-100] * len(prompt) + answer + [-100] * len(end)
    path = write_jsonl(tmp_path / "tok.jsonl", [{"input_ids": ids, "labels": good}, {"input_ids": ids, "labels": bad}])
    hits = fired(path, QWEN25, "DS004")
    assert set(hits) == {1} and "masked" in hits[1]


@needs_corpus
def test_ds004_generation_block_that_leaves_out_the_end_of_turn(tmp_path, chats, alpaca_rows):
    template = (TRL_TEMPLATES / "qwen2_5_training.jinja").read_text()
    # close the generation block before the end-of-turn token of plain assistant replies
    broken = template.replace("{{- '\\n' + message.content + '<|im_end|>\\n' }}", "{{- '\\n' + message.content }}", 1)
    broken = broken.replace("{%- endgeneration %}", "{%- endgeneration %}{%- if not message.tool_calls %}{{- '<|im_end|>\\n' }}{%- endif %}", 1)
    assert broken.count("<|im_end|>") == template.count("<|im_end|>")
    (tmp_path / "broken.jinja").write_text(broken)
    path = chats([alpaca_as_messages(r) for r in alpaca_rows[:2]])
    hits = fired(path, QWEN25, "DS004", train_on="assistant", framework="trl", chat_template=str(tmp_path / "broken.jinja"))
    assert set(hits) == {0, 1} and "'<|im_end|>'" in hits[0]
    clean = fired(path, QWEN25, "DS004", train_on="assistant", framework="trl", chat_template=str(TRL_TEMPLATES / "qwen2_5_training.jinja"))
    assert clean == {}
    # axolotl 0.19 ignores generation markers: it trains the reply and <|im_end|> (checked against axolotl itself)
    assert fired(path, QWEN25, "DS004", framework="axolotl", chat_template=str(tmp_path / "broken.jinja")) == {}


@needs_corpus
def test_ds004_under_axolotl_defaults_phi3_never_trains_its_end_token(chats, alpaca_rows):
    """axolotl's default eot_tokens is the EOS (<|endoftext|>), written once at the end: <|end|> is never trained."""
    two_turns = alpaca_as_messages(alpaca_rows[0]) + alpaca_as_messages(alpaca_rows[1])
    path = chats([two_turns, alpaca_as_messages(alpaca_rows[2])])
    hits = fired(path, PHI3, "DS004", framework="axolotl")
    assert set(hits) == {0} and "'<|end|>' is present but masked" in hits[0] and "message 1" in hits[0]
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(PHI3), framework="axolotl", select=("DS004",), all_rows=True))
    assert "eot_tokens" in report.findings[0].hint
    fixed = build_report(InspectOptions(dataset=str(path), tokenizer=str(PHI3), framework="axolotl", select=("DS004",),
                                        all_rows=True, framework_options=AxolotlOptions(eot_tokens=("<|end|>",))))
    assert fixed.findings == ()


@needs_corpus
def test_ds004_mistral_nemo_with_a_system_message_trains_its_end_token_under_axolotl(chats, alpaca_rows):
    """The template moves the system message into the last user turn; axolotl still finds each reply and trains </s>."""
    with_system = [{"role": "system", "content": "Be brief."}, *alpaca_as_messages(alpaca_rows[0]), *alpaca_as_messages(alpaca_rows[1])]
    assert fired(chats([with_system]), NEMO, "DS004", framework="axolotl") == {}


def test_ds005_text_without_eos_under_a_bare_trainer(tmp_path):
    path = write_jsonl(tmp_path / "text.jsonl", [{"text": "Question: 2+2?\nAnswer: 4"}, {"text": "Question: 2+2?\nAnswer: 4<|im_end|>"}])
    assert set(fired(path, QWEN25, "DS005", framework="transformers")) == {0}
    assert fired(path, QWEN25, "DS005", framework="trl") == {}  # TRL appends EOS itself


@needs_corpus
def test_ds006_pad_equal_to_eos_with_a_collator_that_masks_pad_ids(chats, alpaca_rows):
    path = chats([alpaca_as_messages(alpaca_rows[0])])
    assert list(fired(path, PHI3, "DS006", framework="transformers")) == [None]  # Phi-3: pad == eos
    assert fired(path, PHI3, "DS006", framework="trl") == {}
    assert fired(path, QWEN25, "DS006", framework="transformers") == {}  # pad <|endoftext|>, eos <|im_end|>


@needs_corpus
def test_ds007_and_ds008_truncation_keeping_the_start(chats, alpaca_rows):
    path = chats([alpaca_as_messages(r) for r in alpaca_rows[:1]])
    truncated = fired(path, QWEN25, "DS007", train_on="assistant", max_length=60)
    assert set(truncated) == {0} and "the end-of-turn token is lost" in truncated[0]
    assert fired(path, QWEN25, "DS008", train_on="assistant", max_length=60) == {}
    prompt_only = fired(path, QWEN25, "DS008", train_on="assistant", max_length=20)
    assert set(prompt_only) == {0}
    assert fired(path, QWEN25, "DS007", train_on="assistant", max_length=4096) == {}


@needs_corpus
def test_truncation_follows_the_framework(chats, alpaca_rows):
    """axolotl drops rows that are too long; LLaMA-Factory cuts the prompt to leave room for the response."""
    long_prompt = "Summarize:\n" + "\n".join(r["output"] for r in alpaca_rows[30:33])
    path = chats([[{"role": "user", "content": long_prompt}, {"role": "assistant", "content": alpaca_rows[0]["output"]}]])
    dropped = fired(path, QWEN25, "DS007", framework="axolotl", train_on="assistant", max_length=300)
    assert "leaves it out of training" in dropped[0]
    assert fired(path, QWEN25, "DS008", framework="axolotl", train_on="assistant", max_length=300) == {}
    assert set(fired(path, QWEN25, "DS008", framework="trl", train_on="assistant", max_length=300)) == {0}
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), framework="llama-factory",
                                         train_on="assistant", max_length=300, all_rows=True))
    assert {f.code for f in report.findings} >= {"DS007"} and "DS008" not in {f.code for f in report.findings}
    assert report.summary["tokens"] == 300 and report.summary["trainable_tokens"] > 0


@needs_corpus
def test_ds009_template_raises_on_non_alternating_roles(chats):
    path = chats([
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"}],
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "c"}],
    ])
    hits = fired(path, NEMO, "DS009")
    assert set(hits) == {0, None} and "alternate" in hits[0]
    assert hits[None].startswith("the run will not start: TRL's SFTTrainer")  # it maps the template over every row


def test_ds010_bad_lines_and_bad_messages_are_findings_and_the_rest_is_checked(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}) + "\n"
        + '{"messages": [{"role": "user", "content": "hi"}\n'
        + json.dumps({"messages": [{"role": "user", "text": "hi"}, {"role": "assistant", "content": "yo"}]}) + "\n"
        + json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": 7}]}) + "\n"
    )
    hits = fired(path, QWEN25, "DS010")
    assert set(hits) == {1, 2, 3}
    assert "invalid JSON" in hits[1] and "no content" in hits[2] and "content is a number" in hits[3]
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True))
    assert {f.location.line for f in report.findings if f.code == "DS010"} == {2, 3, 4}
    assert report.summary["rows_checked"] == 4 and report.summary["tokens"] > 0


@needs_corpus
def test_ds011_unmapped_sharegpt_tag_and_a_role_the_template_drops(tmp_path, glaive_rows):
    row = json.loads(json.dumps(glaive_rows[0]))
    row["conversations"][1]["from"] = "bot"
    # transformers: the tags mapped as LLaMA-Factory maps them (TRL keeps every tag as a role: DS011 on each row)
    path = write_jsonl(tmp_path / "sg.jsonl", [row, glaive_rows[1]])
    hits = fired(path, QWEN25, "DS011", framework="transformers")
    assert set(hits) == {0} and "'bot'" in hits[0]
    dropped = fired(GLAIVE, PHI3, "DS011", framework="transformers")  # Phi-3's template renders no tool role
    with_tool = {i for i, r in enumerate(glaive_rows) if any(t["from"] == "observation" for t in r["conversations"])}
    assert set(dropped) == with_tool
    assert fired(GLAIVE, QWEN25, "DS011", framework="transformers") == {}


@needs_corpus
def test_ds011_a_system_message_rendered_only_at_inference(chats, alpaca_rows):
    """Mistral-Nemo puts the system message into the last message only when that is a user turn (a served prompt)."""
    system = {"role": "system", "content": "Answer in one sentence."}
    turns = [{"role": "user", "content": alpaca_rows[0]["instruction"]}, {"role": "assistant", "content": alpaca_rows[0]["output"]}]
    path = chats([[system, *turns], turns])
    hits = fired(path, NEMO, "DS011")
    assert set(hits) == {0}
    assert "does not appear in the training render, but the template renders it in the prompt at inference" in hits[0]
    dropped = fired(GLAIVE, PHI3, "DS011", framework="transformers")  # a role the template never renders, training or inference
    assert all("the template drops it" in message for message in dropped.values())


@needs_corpus
def test_ds012_empty_assistant_turn(chats):
    path = chats([
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "  "}],
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    ])
    assert set(fired(path, QWEN25, "DS012")) == {0}


@needs_corpus
def test_ds013_special_token_text_in_content(chats):
    path = chats([
        [{"role": "user", "content": "what does <|im_end|> mean?"}, {"role": "assistant", "content": "b"}],
        [{"role": "user", "content": "what does <im_end> mean?"}, {"role": "assistant", "content": "b"}],
    ])
    hits = fired(path, QWEN25, "DS013")
    assert set(hits) == {0} and "'<|im_end|>'" in hits[0]


def test_ds013_reports_every_special_token_text_trained_as_error_masked_as_warning(chats):
    """`</s>` in a trained Mistral reply was unreported when the user turn held `[INST]`; trained text is an error."""
    path = chats([
        [{"role": "user", "content": "Why does my log show [INST] twice?"},
         {"role": "assistant", "content": "The prompt was wrapped twice.</s> Remove the second wrapper."}],
        [{"role": "user", "content": "What is [INST] for?"}, {"role": "assistant", "content": "It opens a user turn."}],
    ])
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(NEMO), select=("DS013",), all_rows=True,
                                         framework="axolotl"))  # axolotl: assistant turns trained, user masked
    found = sorted((f.location.row, f.location.message_index, f.severity.value, f.message) for f in report.findings)
    assert [(row, message, severity) for row, message, severity, _ in found] == [
        (0, 0, "warning"), (0, 1, "error"), (1, 0, "warning")]
    assert "'[INST]' (masked)" in found[0][3] and "'</s>' in trained content" in found[1][3]
    # trained everything (TRL's default for messages rows): the user's [INST] is trained too
    everything = build_report(InspectOptions(dataset=str(path), tokenizer=str(NEMO), select=("DS013",), all_rows=True,
                                             train_on="all"))
    assert {f.severity.value for f in everything.findings} == {"error"}


@needs_corpus
def test_ds014_qwen3_rewrites_history_and_qwen25_does_not(chats):
    two_turns = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                 {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]
    path = chats([two_turns, two_turns[:2]])
    hits = fired(path, QWEN3, "DS014", train_on="assistant", framework="transformers")
    assert set(hits) == {0} and "message 1" in hits[0]
    assert fired(path, QWEN25, "DS014", train_on="assistant", framework="transformers") == {}
    assert fired(path, PHI3, "DS014", train_on="assistant", framework="transformers") == {}  # its trailing EOS is not a rewrite
    # LLaMA-Factory encodes each turn with its own template (parsed from Qwen3's here): no history is rewritten
    assert fired(path, QWEN3, "DS014", train_on="assistant", framework="llama-factory") == {}
    # axolotl 0.19 diffs whole-conversation renders, so a rewritten history does not move its masks
    assert fired(path, QWEN3, "DS014", framework="axolotl") == {}


@needs_corpus
def test_ds015_no_generation_markers(chats, alpaca_rows):
    path = chats([alpaca_as_messages(alpaca_rows[0])])
    assert list(fired(path, QWEN25, "DS015", train_on="assistant", framework="axolotl")) == [None]
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), select=("DS015",), train_on="assistant"))
    # TRL ships Qwen2.5's template, so assistant_only_loss swaps in its qwen2_5_training.jinja: no refusal
    assert [(f.severity.value, "qwen2_5_training.jinja" in f.message) for f in report.findings] == [("info", True)]
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(NEMO), select=("DS015",), train_on="assistant"))
    assert [f.severity.value for f in report.findings] == ["error"]  # a template TRL does not ship: SFTTrainer raises
    assert "raises ValueError" in report.findings[0].message
    marked = TRL_TEMPLATES / "qwen2_5_training.jinja"
    assert fired(path, QWEN25, "DS015", train_on="assistant", chat_template=str(marked)) == {}
    assert fired(path, QWEN25, "DS015", train_on="all") == {}


@needs_corpus
def test_ds016_reasoning_dropped(chats):
    with_reasoning = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "two plus two is four"}]
    path = chats([with_reasoning])
    assert set(fired(path, QWEN25, "DS016")) == {0}  # Qwen2.5's template ignores reasoning_content
    assert fired(path, QWEN3, "DS016") == {}  # Qwen3 renders it in the last turn
    history = with_reasoning + [{"role": "user", "content": "and 3+3?"}, {"role": "assistant", "content": "6"}]
    assert set(fired(chats([history], "h.jsonl"), QWEN3, "DS016")) == {0}  # dropped from history


def test_ds017_pre_shifted_and_mismatched_labels(tmp_path):
    ids = qwen_ids("<|im_start|>assistant\nhello world, how are you today?<|im_end|>")
    shifted = ids[1:] + [-100]
    path = write_jsonl(tmp_path / "tok.jsonl", [
        {"input_ids": ids, "labels": ids},
        {"input_ids": ids, "labels": shifted},
        {"input_ids": ids, "labels": ids[:-1]},
    ])
    hits = fired(path, QWEN25, "DS017")
    assert set(hits) == {1, 2} and "pre-shifted" in hits[1] and "labels has" in hits[2]


@needs_corpus
def test_ds018_generation_block_around_the_whole_conversation(tmp_path, chats, alpaca_rows):
    template = "{% generation %}" + (TRL_TEMPLATES / "qwen2_5_training.jinja").read_text().replace("{%- generation %}", "").replace("{%- endgeneration %}", "") + "{% endgeneration %}"
    (tmp_path / "wide.jinja").write_text(template)
    path = chats([alpaca_as_messages(alpaca_rows[0])])
    assert set(fired(path, QWEN25, "DS018", train_on="assistant", chat_template=str(tmp_path / "wide.jinja"))) == {0}
    assert fired(path, QWEN25, "DS018", train_on="assistant", chat_template=str(TRL_TEMPLATES / "qwen2_5_training.jinja")) == {}


def test_ds019_prompt_ending_in_a_space_glues_it_to_the_answer(tmp_path):
    path = write_jsonl(tmp_path / "pc.jsonl", [
        {"prompt": "Q: capital of France?\nA: ", "completion": "Paris"},
        {"prompt": "Q: capital of France?\nA:", "completion": " Paris"},
    ])
    hits = fired(path, QWEN25, "DS019", framework="transformers")
    assert set(hits) == {0} and "' Paris'" in hits[0]
    assert fired(path, QWEN25, "DS019") == {}  # TRL trains from where its two tokenizations diverge: nothing is split


@needs_corpus
def test_ds020_tool_call_arguments_as_a_json_string(chats):
    def row(arguments):
        return [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": arguments}}]},
                {"role": "tool", "content": "sunny"}, {"role": "assistant", "content": "It is sunny."}]
    path = chats([row('{"city": "Paris"}'), row({"city": "Paris"}), row('{"city": ')])
    hits = fired(path, QWEN25, "DS020")
    assert set(hits) == {0, 2} and "double-escaped" in hits[0]
    # axolotl json.loads string arguments before rendering (and stops on one that does not parse)
    assert fired(path, QWEN25, "DS020", framework="axolotl") == {}
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), rows=(0, 1, 2), framework="axolotl"))
    prompts = {v["row"]: v.get("prompt") for v in report.details["rows"]}
    assert prompts[0] == prompts[1] and '"arguments": {"city": "Paris"}' in prompts[0]
    errors = [f.message for f in report.findings if f.code == "DS010"]
    assert errors == ["message 1: tool-call arguments are a string that is not valid JSON (Expecting value); axolotl stops on this row"]


@needs_corpus
def test_ds021_repeated_stop_tokens(tmp_path):
    ids = qwen_ids("<|im_start|>assistant\nhello<|im_end|>")
    path = write_jsonl(tmp_path / "tok.jsonl", [{"input_ids": ids + ids[-1:]}, {"input_ids": ids}])
    assert set(fired(path, QWEN25, "DS021")) == {0}
    text = write_jsonl(tmp_path / "text.jsonl", [{"text": "<|user|>\nhi<|end|>\n<|assistant|>\nhello<|end|>"}])
    hits = fired(text, PHI3, "DS021", framework="trl")  # TRL appends <|endoftext|> right after <|end|>
    assert set(hits) == {0} and "'<|endoftext|>'" in hits[0]


@needs_corpus
def test_ds022_chatml_template_on_a_tokenizer_without_its_tokens(chats, alpaca_rows, tmp_path):
    chatml = json.loads((QWEN25 / "tokenizer_config.json").read_text())["chat_template"]
    (tmp_path / "chatml.jinja").write_text(chatml)
    path = chats([alpaca_as_messages(alpaca_rows[0])])
    hits = fired(path, PHI3, "DS022", chat_template=str(tmp_path / "chatml.jinja"))
    assert list(hits) == [None] and "<|im_" in hits[None]
    assert fired(path, QWEN25, "DS022") == {} and fired(path, NEMO, "DS022") == {} and fired(path, PHI3, "DS022") == {}


@needs_corpus
def test_ds023_eos_is_not_the_end_of_turn_token(chats, alpaca_rows, tmp_path):
    path = chats([alpaca_as_messages(alpaca_rows[0])])
    assert list(fired(path, PHI3, "DS023")) == [None]
    assert fired(path, QWEN25, "DS023") == {}
    folder = tmp_path / "phi3"
    shutil.copytree(PHI3, folder)
    (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": [32000, 32001, 32007]}))
    assert fired(path, folder, "DS023") == {}


@needs_corpus
@pytest.mark.parametrize("tokenizer", [QWEN25, PHI3, NEMO])
def test_clean_real_data_gets_no_error_or_warning(tokenizer):
    """The alpaca demo as axolotl trains it (its alpaca prompter: the response trained, the prompt masked)."""
    report = build_report(InspectOptions(dataset=str(ALPACA), tokenizer=str(tokenizer), framework="axolotl", train_on="assistant", sample=100))
    loud = [f for f in report.findings if f.severity.value != "info" and f.code != "DS023"]
    assert loud == []
    assert report.summary["trainable_tokens"] > 0.5 * report.summary["tokens"]


@needs_corpus
def test_worker_processes_give_the_same_report_as_one_process():
    options = dict(dataset=str(GLAIVE), tokenizer=str(PHI3), all_rows=True, framework="axolotl", train_on="assistant")
    one = build_report(InspectOptions(**options, workers=1))
    two = build_report(InspectOptions(**options, workers=2))
    assert one.findings and one.findings == two.findings
    assert one.summary == two.summary and one.details == two.details


@needs_corpus
def test_ds024_and_ds025_templates_that_drop_tool_calls_and_tool_definitions(glaive_rows):
    calls = {i for i, r in enumerate(glaive_rows) if any(t["from"] == "function_call" for t in r["conversations"])}
    with_tools = {i for i, r in enumerate(glaive_rows) if r.get("tools") not in (None, "", "[]")}
    assert calls and with_tools
    dropped = fired(GLAIVE, PHI3, "DS024", framework="transformers")  # Phi-3's template renders content only
    assert set(dropped) == calls and "'search_recipes'" in dropped[0]
    assert set(fired(GLAIVE, PHI3, "DS025", framework="transformers")) == with_tools
    assert fired(GLAIVE, QWEN25, "DS024", framework="transformers") == {} and fired(GLAIVE, QWEN25, "DS025", framework="transformers") == {}
