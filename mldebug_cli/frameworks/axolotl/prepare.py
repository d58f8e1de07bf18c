"""The rows axolotl 0.19.0 hands its trainer, in order: its dataset preparation (``utils/data/sft.py``
``_load_raw_datasets`` and ``_load_and_prepare_datasets``) replayed over the rows as mldebug encodes them. Verified
against axolotl's own ``prepare_datasets`` by ``tools/axolotl_prepare_goldens.py``
(``fixtures/batch-plan/axolotl-0.19.0-prepare.jsonl``).

In axolotl's order:
1. merge (``utils/data/shared.py`` ``merge_datasets``): one dataset is shuffled with ``seed`` unless
   ``curriculum_sampling`` or ``shuffle_merged_datasets: false``; several are each shuffled first with
   ``shuffle_before_merging_datasets``, concatenated, and the whole shuffled with ``shuffle_merged_datasets``
   (default true), curriculum or not. A shuffle is ``datasets``' ``Dataset.shuffle``: numpy's
   ``default_rng(seed).permutation``. Without a ``seed`` key the schema's default-seed validator does not run
   (it runs on a given ``seed: null``, which becomes 42), so the shuffle draws from numpy's global generator: refused;
2. ``handle_long_seq_in_dataset``: ``excess_length_strategy`` drop (default) keeps rows of ``min_sample_len`` (unset
   or 0: 2) to ``sequence_len`` tokens; truncate keeps rows of at least ``min_sample_len`` and cuts the rest;
   raise stops on a longer row;
3. with ``sample_packing``: rows with no trained token are dropped (``process_datasets_for_packing``);
4. ``dataset_exact_deduplication``: the first of equal rows is kept;
5. ``val_set_size``: ``train_test_split(shuffle=False)``: the last ``ceil(size × rows)`` rows (a fraction) or
   ``size`` rows (above 1) are the eval split, the rest train.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mldebug_cli.schedule.batch_plan import PlanRefused

DEFAULT_MIN_SAMPLE_LEN = 2  # filter_sequences_by_length: ``min_sequence_len or 2``
EXPLICIT_NULL_SEED = 42  # utils/schemas/validation.py set_default_seed, on a given ``seed: null``
STRATEGIES = ("drop", "truncate", "raise")


class NotPrepared(PlanRefused):
    """axolotl's prepared rows are not decided by the config and rows, or axolotl stops (the message says why)."""


@dataclass(frozen=True)
class EncodedRow:
    """One row of one of the config's datasets as mldebug encodes it for the config."""

    dataset: int
    row: int  # 0-based, in its dataset file
    length: int  # tokens before any cut
    trained: bool  # a label is trained within the first sequence_len tokens
    content: Hashable | None = None  # equal for rows axolotl's deduplication finds equal; None: not known


@dataclass(frozen=True)
class Preparation:
    """The config keys that decide axolotl's prepared rows (defaults: axolotl 0.19.0's schema)."""

    seed: int | None = None
    shuffle_merged_datasets: bool = True
    shuffle_before_merging_datasets: bool = False
    curriculum_sampling: bool = False
    sample_packing: bool = False
    sequence_len: int = 2048
    min_sample_len: int | None = None
    excess_length_strategy: str = "drop"
    val_set_size: float = 0.0
    dataset_exact_deduplication: bool = False

    @classmethod
    def of_config(cls, config: Mapping[str, Any]) -> Preparation:
        seed = config.get("seed")
        if "seed" in config and seed is None:
            seed = EXPLICIT_NULL_SEED
        strategy = str(config.get("excess_length_strategy") or "drop").lower()
        if strategy not in STRATEGIES:
            raise NotPrepared(f"excess_length_strategy {strategy!r} is none of {', '.join(STRATEGIES)}")
        return cls(
            seed=seed if isinstance(seed, int) else None,
            shuffle_merged_datasets=_flag(config, "shuffle_merged_datasets", True),
            shuffle_before_merging_datasets=_flag(config, "shuffle_before_merging_datasets", False),
            curriculum_sampling=_flag(config, "curriculum_sampling", False),
            sample_packing=_flag(config, "sample_packing", False),
            sequence_len=int(config.get("sequence_len") or 2048),
            min_sample_len=config.get("min_sample_len"),
            excess_length_strategy=strategy,
            val_set_size=float(config.get("val_set_size") or 0.0),
            dataset_exact_deduplication=_flag(config, "dataset_exact_deduplication", False))

    def shuffles(self, datasets: int) -> bool:
        if datasets == 1:
            return self.shuffle_merged_datasets and not self.curriculum_sampling
        return self.shuffle_merged_datasets or self.shuffle_before_merging_datasets

    def describe(self) -> str:
        merged = ("shuffled (seed " + str(self.seed) + ")") if self.shuffles(1) else "in file order"
        parts = [f"rows {merged}", f"{self.excess_length_strategy} outside [{self.min_length}, {self.sequence_len}] "
                                   "tokens"]
        if self.sample_packing:
            parts.append("rows with nothing trained dropped")
        if self.dataset_exact_deduplication:
            parts.append("exact duplicates dropped")
        if self.val_set_size:
            parts.append(f"val_set_size {self.val_set_size:g} split off the end")
        return "axolotl's preparation: " + ", ".join(parts)

    @property
    def min_length(self) -> int:
        return self.min_sample_len or DEFAULT_MIN_SAMPLE_LEN


def _flag(config: Mapping[str, Any], key: str, default: bool) -> bool:
    value = config.get(key)
    return default if value is None else bool(value)


def prepared_rows(datasets: Sequence[Sequence[EncodedRow]], p: Preparation) -> tuple[list[EncodedRow], list[EncodedRow]]:
    """(train rows, eval rows) as axolotl hands them to its trainer, from each dataset's rows in file order."""
    if p.seed is None and p.shuffles(len(datasets)) and sum(len(d) for d in datasets) > 1:
        raise NotPrepared("the config sets no seed: axolotl shuffles the merged rows with numpy's unseeded global "
                          "generator (Dataset.shuffle(seed=None)), so their order is not decided by the config")
    rows = _merged(datasets, p)
    rows = _by_length(rows, p)
    if p.sample_packing:
        rows = [r for r in rows if r.trained]
        if not rows:
            raise NotPrepared("no row has a trained token: axolotl stops before training (process_datasets_for_packing)")
    if p.dataset_exact_deduplication:
        rows = _deduplicated(rows)
    return _split(rows, p.val_set_size)


def _merged(datasets: Sequence[Sequence[EncodedRow]], p: Preparation) -> list[EncodedRow]:
    if len(datasets) == 1:
        return _shuffled(datasets[0], p.seed) if p.shuffles(1) else list(datasets[0])
    parts = [_shuffled(d, p.seed) if p.shuffle_before_merging_datasets else list(d) for d in datasets]
    merged = [row for part in parts for row in part]
    return _shuffled(merged, p.seed) if p.shuffle_merged_datasets else merged


def _shuffled(rows: Sequence[EncodedRow], seed: int | None) -> list[EncodedRow]:
    """``Dataset.shuffle(seed=seed)``: numpy's PCG64 permutation."""
    import numpy as np

    return [rows[int(i)] for i in np.random.default_rng(seed).permutation(len(rows))]


def _by_length(rows: list[EncodedRow], p: Preparation) -> list[EncodedRow]:
    if p.excess_length_strategy == "truncate":
        return [r if r.length <= p.sequence_len else replace(r, length=p.sequence_len)
                for r in rows if r.length >= p.min_length]
    if p.excess_length_strategy == "raise":
        longer = next((r for r in rows if r.length > p.sequence_len), None)
        if longer is not None:
            raise NotPrepared(f"excess_length_strategy: raise: row {longer.row} has {longer.length:,} tokens, over "
                              f"sequence_len {p.sequence_len:,}: axolotl stops while preparing the dataset")
    return [r for r in rows if p.min_length <= r.length <= p.sequence_len]


def _deduplicated(rows: list[EncodedRow]) -> list[EncodedRow]:
    if any(r.content is None for r in rows):
        raise NotPrepared("dataset_exact_deduplication compares each prepared row's columns: mldebug does not keep "
                          "the rows' ids to compare")
    seen: set[Hashable] = set()
    kept = []
    for r in rows:
        if r.content not in seen:
            seen.add(r.content)
            kept.append(r)
    return kept


def _split(rows: list[EncodedRow], size: float) -> tuple[list[EncodedRow], list[EncodedRow]]:
    """``train_test_split(test_size=size, shuffle=False)`` (``datasets``): axolotl passes ``int(size)`` above 1, else
    the fraction; datasets' sizes and refusals."""
    if not size:
        return rows, []
    count = len(rows)
    held = int(size) if size > 1 else math.ceil(size * count) if 0 < size < 1 else 0
    if held <= 0 or held >= count:
        raise NotPrepared(f"val_set_size {size:g} of {count:,} prepared rows leaves no training row or no eval row: "
                          "axolotl stops (datasets' train_test_split)")
    return rows[:count - held], rows[count - held:]
