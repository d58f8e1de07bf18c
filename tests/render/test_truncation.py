"""Truncation as each trainer does it."""

from __future__ import annotations

import pytest

from mldebug_cli.render.truncation import infer_seqlen, truncate


@pytest.mark.parametrize(
    ("source", "target", "budget", "expected"),
    [
        (100, 10, 50, (40, 10)),  # a short response keeps all of itself
        (10, 100, 50, (10, 40)),  # a short prompt keeps all of itself, the response gets the rest
        (300, 100, 200, (150, 50)),  # both long: the budget is split in proportion
        (5830, 5731, 2048, (1033, 1015)),  # the glaive demo row 243 with cutoff_len 2048
    ],
)
def test_infer_seqlen_matches_llama_factory(source, target, budget, expected):
    assert infer_seqlen(source, target, budget) == expected


def test_modes():
    ids = list(range(10))
    labels = [-100] * 4 + ids[4:]
    start = truncate(ids, labels, 6, "keep_start")
    assert start.ids == ids[:6] and start.cut_ids == ids[6:]
    assert truncate(ids, labels, 6, "drop").dropped
    pairs = truncate(ids, labels, 6, "pairs", turns=[(4, 10)])  # 4 prompt + 6 response tokens into 6: 3 + 3
    assert pairs.ids == [0, 1, 2, 4, 5, 6] and pairs.labels == [-100] * 3 + [4, 5, 6]
    assert pairs.cut_ids == [3, 7, 8, 9]
    two_turns = truncate(list(range(20)), list(range(20)), 12, "pairs", turns=[(2, 8), (10, 20)])
    assert two_turns.ids[:8] == list(range(8)) and len(two_turns.ids) == 12
    assert truncate(ids, labels, 20, "keep_start").cut_ids == []
