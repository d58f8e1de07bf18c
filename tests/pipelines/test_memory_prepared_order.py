"""memory's peak batch for a framework that prepares its rows before its sampler (axolotl): the first epoch's
micro-batches by file row from axolotl's preparation then its sampler, or no order (and no step) with the reason."""

from __future__ import annotations

import pytest

from mldebug_cli.frameworks.registry import framework
from mldebug_cli.pipelines.memory import Lengths, prepared_order
from mldebug_cli.schedule.batch_plan import shuffled_order

ROWS = [(r, (10 + r,), 5) for r in range(12)]  # 12 rows, all within sequence_len


def config(tmp_path, **keys) -> str:
    path = tmp_path / "axolotl.yml"
    path.write_text("base_model: some/model\ndatasets:\n  - path: train.jsonl\n    type: chat_template\n"
                    "micro_batch_size: 2\ngradient_accumulation_steps: 3\nsequence_len: 64\n"
                    + "".join(f"{k}: {v}\n" for k, v in keys.items()))
    return str(path)


def test_the_first_epoch_is_axolotls_merged_row_shuffle_then_its_trainers_sampler(tmp_path):
    np = pytest.importorskip("numpy")
    order = prepared_order(framework("axolotl"), config(tmp_path, seed=5), 1, Lengths(ROWS, total=12))
    prepared = np.random.default_rng(5).permutation(12).tolist()  # datasets' Dataset.shuffle(seed=5)
    sampled = [prepared[i] for i in shuffled_order(12, 5)]  # the Trainer's seeded sampler over the prepared rows
    assert order.batches == tuple((i // 6 + 1, tuple(sampled[i:i + 2])) for i in range(0, 12, 2))
    assert "rows shuffled (seed 5)" in order.note


@pytest.mark.parametrize("keys, lengths, words", [
    ({}, Lengths(ROWS, total=12), "the config sets no seed"),
    ({"seed": 5}, Lengths(ROWS, total=12, sampled=True), "a sample of the rows was read"),
    ({"seed": 5}, Lengths([], not_read="no tokenizer"), "the rows were not read"),
    ({"seed": 5}, Lengths(ROWS, total=13, failed=1), "1 rows of the dataset could not be encoded"),
])
def test_an_order_not_replayed_names_no_step_and_says_why(tmp_path, keys, lengths, words):
    order = prepared_order(framework("axolotl"), config(tmp_path, **keys), 1, lengths)
    assert order.batches is None and words in order.note and "no step is named" in order.note
