"""Format detection and row conversion on random rows: a format, an InputError or a RowProblem, nothing else."""

from __future__ import annotations

import pytest
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.row_formats import (
    ROW_FORMATS,
    Chat,
    PromptCompletion,
    RowProblem,
    Text,
    Tokens,
    detect,
    to_sample,
)

KEYS = ("messages", "conversations", "conversation", "role", "content", "from", "value", "tool_calls", "tools",
        "instruction", "input", "output", "history", "system", "prompt", "completion", "text", "input_ids", "labels",
        "chosen", "rejected", "function", "name", "arguments", "type")
ROLES = ("system", "user", "assistant", "tool", "human", "gpt", "function_call", "observation", "robot", "")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) | st.text(max_size=6) | st.sampled_from(ROLES),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=20,
)
text = st.text(max_size=20)
loose = text | json_values
loose_messages = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(ROLES) | json_values, "content": loose},
                          optional={"tool_calls": json_values, "name": loose}),
    max_size=4,
) | json_values
# Rows shaped like each format with any field replaced by anything, and rows of anything at all.
rows = st.one_of(
    st.fixed_dictionaries({"messages": loose_messages}, optional={"tools": json_values | st.just("[{bad json")}),
    st.fixed_dictionaries(
        {"conversations": st.lists(st.fixed_dictionaries({"from": st.sampled_from(ROLES) | json_values, "value": loose}),
                                   max_size=4) | json_values},
        optional={"system": loose, "tools": json_values},
    ),
    st.fixed_dictionaries({"instruction": loose, "output": loose}, optional={"input": loose, "history": json_values}),
    st.fixed_dictionaries({"prompt": loose | loose_messages, "completion": loose | loose_messages}),
    st.fixed_dictionaries({"text": loose}),
    st.fixed_dictionaries({"input_ids": st.lists(st.integers(-1, 10**6), max_size=4) | json_values},
                          optional={"labels": st.lists(st.integers(-100, 9), max_size=4) | json_values}),
    st.dictionaries(st.sampled_from(KEYS), json_values, max_size=5),
    json_values,
)
turns = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), text), min_size=1, max_size=6).filter(
    lambda t: any(role == "assistant" for role, _ in t)
)


@settings(max_examples=500, deadline=None)
@given(head=st.lists(rows, min_size=1, max_size=3), row=rows)
def test_any_rows_get_a_format_or_a_one_line_input_error_and_any_row_converts_or_is_a_row_problem(head, row):
    assume(not any(_history_is_a_scalar(r) for r in [*head, row]))  # the known bug below
    try:
        detection = detect(head, "data.jsonl")
    except InputError as exc:
        event("no format")
        assert "\n" not in exc.message
        return
    assert detection.row_format in ROW_FORMATS
    for each in [*head, row]:
        try:
            sample = to_sample(each, detection)
        except RowProblem as problem:
            event(f"{detection.row_format}: {problem.code}")
            assert problem.code in ("DS010", "DS011") and "\n" not in problem.message
            continue
        event(f"{detection.row_format}: converted")
        assert isinstance(sample, (Chat, PromptCompletion, Text, Tokens))


def test_an_alpaca_history_that_is_a_number_is_a_row_problem():
    """Found by the property above: a TypeError here stops the whole inspect-data run with an internal error."""
    row = {"instruction": "", "output": "", "history": 1}
    with pytest.raises(RowProblem):
        to_sample(row, detect([row], "data.json"))


def _history_is_a_scalar(row) -> bool:
    return isinstance(row, dict) and isinstance(row.get("history"), (int, float)) and bool(row["history"])


@settings(max_examples=200, deadline=None)
@given(conversation=turns, system=st.none() | text)
def test_one_conversation_in_every_format_is_detected_and_converts_to_the_same_messages(conversation, system):
    messages = [{"role": role, "content": content} for role, content in conversation]
    expected = ([{"role": "system", "content": system}] if system else []) + messages
    as_messages = {"messages": expected}
    as_sharegpt = {"conversations": [{"from": {"user": "human", "assistant": "gpt"}[r], "value": c} for r, c in conversation]}
    if system:
        as_sharegpt["system"] = system
    for row, row_format in ((as_messages, "messages"), (as_sharegpt, "sharegpt")):
        detection = detect([row], "data.jsonl")
        assert detection.row_format == row_format
        assert to_sample(row, detection).messages == expected


@settings(max_examples=200, deadline=None)
@given(instruction=text, inp=text, output=text, history=st.lists(st.tuples(text, text), max_size=2))
def test_alpaca_rows_become_user_and_assistant_turns_as_llama_factory_builds_them(instruction, inp, output, history):
    row = {"instruction": instruction, "input": inp, "output": output, "history": [list(pair) for pair in history]}
    detection = detect([row], "data.json")
    assert detection.row_format == "alpaca"
    past = [m for q, a in history for m in ({"role": "user", "content": q}, {"role": "assistant", "content": a})]
    user = "\n".join(part for part in (instruction, inp) if part)  # LLaMA-Factory's converter joins the parts it has
    assert to_sample(row, detection).messages == past + [{"role": "user", "content": user}, {"role": "assistant", "content": output}]
