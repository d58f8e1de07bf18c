"""axolotl 0.19.0's dataset preparation before its sampler (``frameworks.axolotl.prepare``): the config keys as its
schema reads them; the rows themselves are held to axolotl's own ``prepare_datasets`` by the ``axolotl-prepare``
golden suite (fixtures/batch-plan/axolotl-0.19.0-prepare.jsonl)."""

from __future__ import annotations

import pytest

from mldebug_cli.frameworks.axolotl.prepare import EncodedRow, NotPrepared, Preparation, prepared_rows


def rows(*lengths: int) -> list[list[EncodedRow]]:
    return [[EncodedRow(0, r, n, True, r) for r, n in enumerate(lengths)]]


def test_a_given_null_seed_is_42_and_an_absent_one_is_none():
    # utils/schemas/validation.py: set_default_seed runs on a given value only (no validate_default)
    assert Preparation.of_config({"seed": None}).seed == 42
    assert Preparation.of_config({}).seed is None
    assert Preparation.of_config({"seed": 7}).seed == 7


def test_without_a_seed_the_shuffled_order_is_refused_and_the_file_order_is_not():
    with pytest.raises(NotPrepared, match="sets no seed"):
        prepared_rows(rows(3, 4, 5), Preparation.of_config({}))
    train, held = prepared_rows(rows(3, 4, 5), Preparation.of_config({"shuffle_merged_datasets": False}))
    assert [r.row for r in train] == [0, 1, 2] and held == []


def test_rows_outside_the_length_range_are_dropped_and_the_eval_share_split_off_the_end():
    p = Preparation.of_config({"shuffle_merged_datasets": False, "sequence_len": 8, "val_set_size": 0.25})
    train, held = prepared_rows(rows(1, 2, 8, 9, 5, 0, 4), p)
    assert [r.row for r in train] == [1, 2, 4] and [r.row for r in held] == [6]


@pytest.mark.parametrize("size", [3, 1.0, 0.99])
def test_a_split_that_leaves_no_training_row_is_refused(size):
    p = Preparation.of_config({"shuffle_merged_datasets": False, "val_set_size": size})
    with pytest.raises(NotPrepared, match="leaves no training row"):
        prepared_rows(rows(3, 4, 5), p)
