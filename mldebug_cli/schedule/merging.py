"""The training rows of a loader that merges a config's datasets and splits off its eval rows before its processor
drops any (LLaMA-Factory 0.9.5, ``data/loader.py``: each dataset capped at ``max_samples``, then
``merge_dataset``, then ``split_dataset``, then the processor, which drops the rows its converter emptied).

The merge and the split are replayed with ``datasets``' own ``concatenate_datasets``/``interleave_datasets`` and
``train_test_split`` on the row numbers, with the run's seed, so a dropped row drawn twice (interleave_over) or moved
to the eval set counts as LLaMA-Factory counts it. Where every row was read the count is exact; from a sample, each
dataset's share of rows that train is applied to the rows drawn from it. What LLaMA-Factory raises on (a dataset with
no row left beside others: its features cannot be aligned; no valid row in the train or eval set; a split that leaves
the train set empty) is raised as an ``InputError`` naming it (tests/schedule/test_llama_factory_max_samples.py holds
both to LLaMA-Factory's own loader).
"""

from __future__ import annotations

from dataclasses import dataclass

from mldebug_cli.core.errors import SETTING_DATASET_MERGE, InputError
from mldebug_cli.schedule.dataset_size import DatasetSize
from mldebug_cli.schedule.model import DatasetMerge

SAMPLED = " (judged from the rows checked, a sample: --all checks every row)"
STOPPING = {"interleave_under": "first_exhausted", "interleave_over": "all_exhausted",
            "interleave_once": "all_exhausted_without_replacement"}  # merge_dataset's strategy_map


@dataclass(frozen=True)
class MergedRows:
    train: int  # rows the trainer gets: the train split's rows that train
    drawn: int  # rows merged (before the split and the drops)
    evaluated: int  # rows of the eval split that train


def merged_rows(merge: DatasetMerge, size: DatasetSize, framework: str = "LLaMA-Factory") -> MergedRows:
    """The train rows after ``merge`` over the datasets ``size`` measured (``size.loaded``: rows each loader read;
    ``size.kept_rows`` or ``size.per_dataset``: those that train)."""
    loaded = size.loaded
    kept = size.per_dataset or (size.rows,)
    exact = len(size.kept_rows) == len(loaded) and all(n == len(k) for n, k in zip(kept, size.kept_rows))
    if merge.refused and len(loaded) > 1:
        raise InputError(f"{framework} will not start: {merge.refused}",
                         hint="use mix_strategy concat, interleave_under or interleave_over",
                         setting=SETTING_DATASET_MERGE)
    empty = [n for n, (rows, trained) in enumerate(zip(loaded, kept)) if rows and not trained]
    if len(loaded) > 1 and empty and len(empty) < len(loaded):
        raise InputError(f"{framework} will not start: dataset {empty[0] + 1} of {len(loaded)} has no row left "
                         f"(every row it reads is dropped{'' if exact else SAMPLED}) and cannot be merged with the "
                         "others (ValueError: the features can't be aligned)",
                         hint="fix that dataset's rows, or leave it out of `dataset`",
                         setting=SETTING_DATASET_MERGE)
    pairs = _merged(merge, loaded)
    train, held = _split(merge, pairs)
    if exact:
        trains = [set(k) for k in size.kept_rows]
        count = sum(1 for d, row in train if row in trains[d])
        evaluated = sum(1 for d, row in held if row in trains[d])
    else:
        share = [k / n if n else 0.0 for k, n in zip(kept, loaded)]
        count = round(sum(share[d] for d, _ in train))
        evaluated = round(sum(share[d] for d, _ in held))
    if not count or (held and not evaluated):
        where = "train" if not count else "eval (val_size)"
        raise InputError(f"{framework} will not start: no row of its {where} set is left to train once the rows it "
                         f"drops are dropped{'' if exact else SAMPLED} (RuntimeError: Cannot find valid samples)",
                         hint="fix the dropped rows, or raise max_samples" + ("" if count else " or lower val_size"),
                         setting=SETTING_DATASET_MERGE)
    return MergedRows(train=count, drawn=len(pairs), evaluated=evaluated)


def _merged(merge: DatasetMerge, loaded: tuple[int, ...]) -> list[tuple[int, int]]:
    """(dataset, row) of every merged row, in the merged order."""
    if len(loaded) == 1 or merge.strategy == "concat":
        return [(d, row) for d, rows in enumerate(loaded) for row in range(rows)]
    if merge.strategy not in STOPPING:
        raise InputError(f"LLaMA-Factory will not start: merge_dataset raises ValueError: Unknown mixing strategy: "
                         f"{merge.strategy}", hint="use mix_strategy concat, interleave_under or interleave_over",
                         setting=SETTING_DATASET_MERGE)
    from datasets import Dataset, interleave_datasets

    parts = [Dataset.from_dict({"d": [d] * rows, "row": list(range(rows))}) for d, rows in enumerate(loaded)]
    try:
        mixed = interleave_datasets(parts, probabilities=list(merge.probabilities) if merge.probabilities else None,
                                    seed=merge.seed, stopping_strategy=STOPPING[merge.strategy])
    except ValueError as exc:
        raise InputError(f"LLaMA-Factory will not start: mix_strategy {merge.strategy}: datasets' interleave_datasets "
                         f"raises: {exc}", setting=SETTING_DATASET_MERGE) from None
    return list(zip(mixed["d"], mixed["row"]))


def _split(merge: DatasetMerge, pairs: list[tuple[int, int]]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(train, eval) as split_dataset splits the merged rows: ``train_test_split(test_size=val_size, seed=seed)``."""
    if merge.val_size <= 1e-6:
        return pairs, []
    from datasets import Dataset

    test_size = merge.val_size
    rows = Dataset.from_dict({"i": list(range(len(pairs)))})
    try:
        split = rows.train_test_split(test_size=test_size, seed=merge.seed)
    except ValueError as exc:
        raise InputError(f"LLaMA-Factory will not start: val_size {merge.val_size:g} over the {len(pairs)} merged "
                         f"rows: train_test_split raises ValueError: {exc}",
                         hint="lower val_size, or give the datasets more rows", setting=SETTING_DATASET_MERGE) from None
    return [pairs[i] for i in split["train"]["i"]], [pairs[i] for i in split["test"]["i"]]
