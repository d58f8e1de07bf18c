"""Row format detection and conversion, on the real LLaMA-Factory and axolotl files."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.row_formats import Chat, PromptCompletion, RowProblem, Text, Tokens, detect, to_sample
from support import ALPACA, AXOLOTL_CONVERSATION, GLAIVE, IDENTITY, needs_corpus


def rows_of(path):
    data = json.loads(path.read_text())
    return data if isinstance(data, list) else [data]


@needs_corpus
@pytest.mark.parametrize(("path", "expected"), [(ALPACA, "alpaca"), (IDENTITY, "alpaca"), (GLAIVE, "sharegpt"), (AXOLOTL_CONVERSATION, "sharegpt")])
def test_detects_the_real_files(path, expected):
    assert detect(rows_of(path), str(path)).row_format == expected


@needs_corpus
def test_sharegpt_function_call_and_observation_become_tool_calls_and_tool_messages():
    row = rows_of(GLAIVE)[0]
    chat = to_sample(row, detect([row], "x"))
    assert isinstance(chat, Chat)
    roles = [m["role"] for m in chat.messages]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant", "user", "assistant"]
    call = chat.messages[3]["tool_calls"][0]["function"]
    assert call["name"] == "search_recipes" and call["arguments"] == {"ingredients": ["chicken", "bell peppers", "rice"]}
    assert chat.tools and chat.tools[0]["name"] == "search_recipes"


def test_alpaca_joins_instruction_and_input_like_llama_factory():
    row = {"instruction": "Translate.", "input": "bonjour", "output": "hello"}
    chat = to_sample(row, detect([row], "x"))
    assert chat.messages == [{"role": "user", "content": "Translate.\nbonjour"}, {"role": "assistant", "content": "hello"}]


def test_other_formats():
    pc = {"prompt": "Q?", "completion": " A."}
    assert isinstance(to_sample(pc, detect([pc], "x")), PromptCompletion)
    text = {"text": "hello"}
    assert to_sample(text, detect([text], "x")) == Text("hello")
    tok = {"input_ids": [1, 2], "labels": [-100, 2]}
    assert to_sample(tok, detect([tok], "x")) == Tokens([1, 2], [-100, 2])
    with pytest.raises(InputError, match="preference dataset"):
        detect([{"chosen": "a", "rejected": "b", "prompt": "p"}], "x")
    # LLaMA-Factory's ranking rows (dpo_en_demo.json): the prompt as conversations, then chosen/rejected
    ranking = {"conversations": [{"from": "human", "value": "Q?"}], "chosen": {"from": "gpt", "value": "A"},
               "rejected": {"from": "gpt", "value": "B"}}
    with pytest.raises(InputError, match=r"x: a preference dataset \(columns chosen/rejected, for DPO"):
        detect([ranking], "x")
    v1 = {"chosen_messages": [{"role": "user", "content": "Q?"}], "rejected_messages": []}  # v1_dpo_demo.jsonl
    with pytest.raises(InputError, match="columns chosen_messages/rejected_messages"):
        detect([v1], "x")
    with pytest.raises(InputError, match="cannot tell the row format"):
        detect([{"foo": 1}], "x")


@pytest.mark.parametrize(
    ("row", "code", "text"),
    [
        ({"messages": []}, "DS010", "empty conversation"),
        ({"messages": [{"content": "x"}]}, "DS010", "no role"),
        ({"messages": [{"role": "user", "content": 3}, {"role": "assistant", "content": "y"}]}, "DS010", "content is a number"),
        ({"messages": [{"role": "user", "content": None}, {"role": "assistant", "content": "y"}]}, "DS010", "content is null"),
        ({"conversations": [{"from": "bot", "value": "x"}]}, "DS011", "'bot'"),
    ],
)
def test_rows_that_do_not_fit(row, code, text):
    detection = detect([row] if row.get("messages") or row.get("conversations") else [{"messages": [{}]}], "x")
    with pytest.raises(RowProblem) as info:
        to_sample(row, detection)
    assert info.value.code == code and text in info.value.message


def test_sharegpt_role_names_in_a_messages_file_are_ds011_with_the_mapping():
    row = {"messages": [{"role": "system", "content": "s"}, {"role": "human", "content": "Q?"},
                        {"role": "gpt", "content": "A."}]}
    with pytest.raises(RowProblem) as info:
        to_sample(row, detect([row], "x"))
    problem = info.value
    assert problem.code == "DS011" and problem.message_index == 1 and "'human'" in problem.message
    assert "human -> user, gpt -> assistant" in problem.hint


def test_an_unknown_role_without_an_assistant_turn_is_named_by_ds011():
    row = {"messages": [{"role": "user", "content": "Hi"}, {"role": "bot", "content": "Hello"}]}
    with pytest.raises(RowProblem) as info:
        to_sample(row, detect([row], "x"))
    assert info.value.code == "DS011" and info.value.message_index == 1 and "'bot'" in info.value.message


def test_an_unknown_role_next_to_an_assistant_turn_is_left_to_the_template_checks():
    row = {"messages": [{"role": "user", "content": "Hi"}, {"role": "critic", "content": "ok"},
                        {"role": "assistant", "content": "Hello"}]}
    assert isinstance(to_sample(row, detect([row], "x")), Chat)


def test_content_as_a_list_of_parts_is_accepted():
    row = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "assistant", "content": "yo"}]}
    assert isinstance(to_sample(row, detect([row], "x")), Chat)
