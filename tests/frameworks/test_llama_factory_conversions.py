"""LLaMA-Factory's converter in the two shapes it reads its own way, held to LLaMA-Factory 0.9.5's own data code
(fixtures/llamafactory-0.9.5/more/conversions.json, by tools/llamafactory_conversions_golden.py):

- a function_call whose ``arguments`` is a JSON string: LLaMA-Factory keeps the string and writes it double-encoded;
- a ShareGPT row with a system turn and a ``system`` column: LLaMA-Factory takes the turn and keeps the row.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from support import FIXTURES, ROOT, TOKENIZERS

GOLDEN = FIXTURES / "llamafactory-0.9.5" / "more" / "conversions.json"


def _golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def _views(case: dict, golden: dict) -> list[dict]:
    from mldebug_cli.frameworks.llama_factory.framework import LlamaFactoryOptions
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    options = LlamaFactoryOptions(template=case["template"], tool_date=golden["tool_date"])
    inspect = InspectOptions(dataset=str(ROOT / golden["rows"]), tokenizer=str(TOKENIZERS / case["tokenizer"]),
                             framework="llama-factory", framework_options=options, show=100)
    return build_report(replace(inspect, rows=tuple(range(len(case["rows"]))))).details["rows"]


@pytest.mark.parametrize("index", range(4))
def test_ids_and_labels_equal_llama_factorys_own(index):
    golden = _golden()
    case = golden["cases"][index]
    views = _views(case, golden)
    assert len(views) == len(case["rows"])
    for view, want in zip(views, case["rows"]):
        assert (view["input_ids"], view["labels"]) == (want["input_ids"], want["labels"]), (case["template"], view["row"])


def test_string_arguments_are_trained_double_encoded_under_llama3():
    from tokenizers import Tokenizer

    golden = _golden()
    case = next(c for c in golden["cases"] if c["template"] == "llama3")
    tokenizer = Tokenizer.from_file(str(TOKENIZERS / "llama3-instruct" / "tokenizer.json"))
    as_string, as_object = (tokenizer.decode(case["rows"][i]["input_ids"]) for i in (0, 1))
    assert '"parameters": "{\\"item\\": \\"apple\\", \\"count\\": 2}"' in as_string
    assert '"parameters": {"item": "apple", "count": 2}' in as_object


def test_the_system_turn_wins_over_the_column_and_the_row_is_kept():
    golden = _golden()
    case = next(c for c in golden["cases"] if c["template"] == "qwen")
    turn_and_column, column, turn = (case["rows"][i] for i in (2, 3, 4))
    assert turn_and_column == turn and turn_and_column != column and turn["input_ids"]


@pytest.mark.parametrize(("turns", "reason"), [
    ([{"from": "human", "value": "hi"}], "1 turn after the system message, an odd count"),
    ([{"from": "system", "value": "be brief"}], "no turns after the system message"),
    ([{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}, {"from": "human", "value": "c"}],
     "3 turns after the system message, an odd count"),
])
def test_a_row_without_a_reply_is_dropped_as_llama_factory_drops_it(turns, reason):
    """LLaMA-Factory 0.9.5's converter drops a row with an odd turn count (Invalid message count) and passes one with
    no turn after its system turn on empty, which the supervised processor drops (Dropped invalid example); the
    differential suite llamafactory-classes holds both to its own data code."""
    from mldebug_cli.frameworks.llama_factory.data import InvalidRow, lf_messages
    from mldebug_cli.sources.row_formats import Detection, to_sample

    sample = to_sample({"conversations": turns}, Detection("sharegpt", "test", "conversations"), False)
    with pytest.raises(InvalidRow, match=reason):
        lf_messages(sample.messages)
