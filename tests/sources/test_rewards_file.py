"""The GRPO rewards file of `probe --rewards`: each line a prompt's completions and rewards; every malformed line
is a one-line error naming the file and the line."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.rewards import read_rewards

GOOD = {"prompt": [{"role": "user", "content": "What is 2+2?"}], "completions": ["4", [19, 20]], "rewards": [1, None]}


def _write(tmp_path, *lines):
    path = tmp_path / "rewards.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return str(path)


def test_a_good_file_gives_one_group_per_line(tmp_path):
    groups = read_rewards(_write(tmp_path, GOOD, "", {**GOOD, "prompt": "Say hi"}), group_size=2)
    assert [g.line for g in groups] == [1, 3]
    assert groups[0].completions == ("4", (19, 20)) and groups[0].rewards == (1.0, None)
    assert groups[1].prompt_text() == "Say hi"


@pytest.mark.parametrize("line, words", [
    ("{not json", "line 2: not JSON"),
    ({"prompt": "x", "completions": ["a"]}, "line 2: missing rewards"),
    ({**GOOD, "rewards": [1.0]}, "line 2: 1 rewards for 2 completions"),
    ({**GOOD, "rewards": [1.0, "high"]}, 'line 2: reward 1 is "high", not a finite number or null'),
    ({**GOOD, "completions": ["a", ""]}, "line 2: completion 1 is neither"),
    ({**GOOD, "prompt": [{"content": "no role"}]}, "line 2: prompt is neither a text nor a list of messages"),
    ({**GOOD, "completions": ["a", "b", "c"], "rewards": [1, 0, 1]}, "line 2: 3 completions; the config's num_generations is 2"),
])
def test_each_malformed_line_is_a_one_line_error_naming_file_and_line(tmp_path, line, words):
    with pytest.raises(InputError) as raised:
        read_rewards(_write(tmp_path, GOOD, line), group_size=2)
    message = raised.value.message
    assert message.startswith("rewards.jsonl: ") and words in message and "\n" not in message


def test_an_empty_file_says_what_a_line_holds(tmp_path):
    with pytest.raises(InputError) as raised:
        read_rewards(_write(tmp_path, ""))
    assert "no lines" in raised.value.message and '"completions"' in raised.value.hint
