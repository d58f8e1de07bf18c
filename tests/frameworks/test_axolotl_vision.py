"""axolotl's multimodal row preparation (ProcessingStrategy.__call__, axolotl 0.19.0) on the shapes its goldens
(tests/goldens/axolotl_vision.py) draw seldom: where the column's image goes, what is left out, what it refuses."""

from __future__ import annotations

import pytest

from mldebug_cli.core.registry import Code
from mldebug_cli.frameworks.axolotl.vision import prepare
from mldebug_cli.frameworks.trl.vision import RowRefused

BARE = {"type": "image"}


def user(*parts: dict) -> dict:
    return {"role": "user", "content": list(parts)}


def test_the_image_goes_into_the_last_message_holding_a_bare_part() -> None:
    raw = {"messages": [user(BARE, {"type": "text", "text": "a"}), {"role": "assistant", "content": "b"},
                        user({"type": "text", "text": "c"}, BARE)], "images": ["x.png", "y.png"]}
    messages, first, unused = prepare(raw, None)
    assert first == "x.png" and unused == 1
    assert messages[0]["content"][0] == BARE  # left bare: the processor gets one image for two placeholders
    assert messages[2]["content"][1] == {"type": "image", "image": "x.png"}


def test_without_a_bare_part_the_image_follows_the_first_user_text() -> None:
    raw = {"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q"},
                             {"from": "gpt", "value": "a"}], "image": ["x.png"]}
    messages, _, unused = prepare(raw, None)
    assert [m["role"] for m in messages] == ["system", "user", "assistant"] and unused == 0
    assert messages[1]["content"] == [{"type": "text", "text": "q"}, {"type": "image", "image": "x.png"}]


def test_a_message_whose_content_is_neither_text_nor_parts_is_left_out() -> None:
    messages, first, _ = prepare({"messages": [{"role": "user", "content": None},
                                               {"role": "assistant", "content": "a"}]}, None)
    assert first is None and [m["role"] for m in messages] == ["assistant"]


@pytest.mark.parametrize("value, words", [("x.png", "its first character ('x')"), ([], "images is empty")])
def test_an_images_column_that_is_not_a_list_of_images_is_refused(value: object, words: str) -> None:
    with pytest.raises(RowRefused) as refused:
        prepare({"messages": [user(BARE)], "images": value}, None)
    assert refused.value.code == Code.IMAGE_UNREADABLE and words in refused.value.message


def test_a_configured_field_is_read_and_a_sharegpt_one_converted() -> None:
    turns = [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]
    messages, _, _ = prepare({"chat": turns, "messages": [{"role": "user", "content": "stale"}]}, "chat")
    assert [(m["role"], m["content"][0]["text"]) for m in messages] == [("user", "q"), ("assistant", "a")]
    messages, _, _ = prepare({"conversations": turns, "messages": [{"role": "user", "content": "kept"}]},
                             "conversations")
    assert messages[0]["content"][0]["text"] == "kept"  # messages, when not null, wins over conversations
