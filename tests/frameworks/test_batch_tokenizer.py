"""BatchTokenizer: a framework's piece-by-piece tokenization answered from one batched call gives the same ids and
offsets as the calls one by one (the goldens then hold the whole rows to the frameworks' own output)."""

from __future__ import annotations

from transformers import AutoTokenizer

from mldebug_cli.frameworks.batch_tokenizer import BatchTokenizer
from support import QWEN25

TEXTS = ["<|im_start|>user\nWhat is 2 + 2?<|im_end|>\n", "4", " spaced  out ", "émoji 🙂 and 中文", "4"]
SETTINGS = [{"add_special_tokens": False, "return_offsets_mapping": True},
            {"truncation": True, "max_length": 5, "return_offsets_mapping": True}]


def one_by_one(tokenizer, text: str, settings: dict) -> tuple[list[int], list[tuple[int, int]]]:
    encoded = tokenizer(text, **settings)
    return list(encoded["input_ids"]), [tuple(o) for o in encoded["offset_mapping"]]


def test_a_batch_of_pieces_tokenizes_as_the_pieces_alone():
    tokenizer = AutoTokenizer.from_pretrained(QWEN25)
    batched = BatchTokenizer(tokenizer)
    items = [(text, settings) for text in TEXTS for settings in SETTINGS]
    calls = []
    real_call = tokenizer.__call__

    def counted(text, **settings):
        calls.append(text)
        return real_call(text, **settings)

    batched._tokenizer = counted  # counts the calls the batch makes (the answers are the tokenizer's own)
    got = batched.encode_batch(items, lambda item: one_by_one(batched, *item))
    batched._tokenizer = tokenizer
    assert got == [one_by_one(tokenizer, text, settings) for text, settings in items]
    assert len(calls) == len(SETTINGS) and all(isinstance(c, list) for c in calls)  # one batched call per setting


def test_a_text_the_first_pass_did_not_see_is_tokenized_alone():
    tokenizer = AutoTokenizer.from_pretrained(QWEN25)
    batched = BatchTokenizer(tokenizer)
    seen = iter([False, False, True, True])  # the second pass asks for a text the first did not

    def encode(text):
        return one_by_one(batched, text + ("!" if next(seen) else ""), SETTINGS[0])

    assert batched.encode_batch(["a", "b"], encode) == [one_by_one(tokenizer, "a!", SETTINGS[0]),
                                                        one_by_one(tokenizer, "b!", SETTINGS[0])]
    assert batched.eos_token_id == tokenizer.eos_token_id  # the tokenizer's attributes show through
