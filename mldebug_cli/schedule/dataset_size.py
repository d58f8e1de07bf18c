"""How many training rows a run sees: from --num-rows, or by counting a dataset file.

With packing on, rows are merged into sequences of ``sequence_len`` tokens, so the row count that
sets the step count is an estimate: from ``input_ids`` when the rows are tokenized, else from the
characters of their text at 3 to 5 characters per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.numbers import plural

CHARS_PER_TOKEN = (3.0, 5.0)  # BPE tokenizers average ~4 characters per token on prose; code and other languages vary
PACKING_FILL_FLOOR = 0.9  # packers fill at least ~90% of each sequence on typical SFT data (axolotl reports 0.9-0.99)


@dataclass(frozen=True)
class DatasetSize:
    rows: int
    source: str  # "--num-rows", the dataset path, or what else gave the count
    token_range: tuple[int, int] | None = None  # tokens a packer sees, each row capped at sequence_len
    tokens_exact: bool = False
    per_dataset: tuple[int, ...] = ()  # rows of each dataset when the run mixes several (LLaMA-Factory max_samples)
    token_basis: str | None = None  # where token_range came from, when not from this file's input_ids or characters
    lengths: tuple[tuple[int, int], ...] = ()  # (tokens after truncation, rows) of the rows that train, when measured
    untrained_lengths: tuple[tuple[int, int], ...] = ()  # the same for rows left with nothing to train (TRL packs them)
    # per dataset, the row indices that train, when every row was read: a cap on a file's first rows (LLaMA-Factory's
    # max_samples, applied before its converter drops rows) counts the kept rows among them
    kept_rows: tuple[tuple[int, ...], ...] = ()
    # per dataset, the rows its loader reads (after a max_samples cap, before its reader drops any): what a loader
    # that merges and splits before dropping rows (LLaMA-Factory) merges and splits
    loaded: tuple[int, ...] = ()


@dataclass(frozen=True)
class PackedRows:
    estimate: int
    low: int | None  # None: no lower bound without token counts
    high: int
    basis: str  # what the estimate rests on, for the LR012 message
    exact: bool = False  # the framework's own packing of every row's measured length: not an estimate


def from_num_rows(rows: int, source: str = "--num-rows") -> DatasetSize:
    if rows < 0:
        raise InputError(f"--num-rows must be 0 or more, got {rows}")
    return DatasetSize(rows=rows, source=source)


def count_dataset(path: str, sequence_len: int | None = None) -> DatasetSize:
    """Count rows; with ``sequence_len`` (packing on) also the tokens a packer would see."""
    from mldebug_cli.sources.shards import open_dataset

    source = open_dataset(path)
    rows = len(source)
    if sequence_len is None:
        return DatasetSize(rows=rows, source=path)
    exact, low, high = 0, 0.0, 0.0
    tokenized = True
    for record in source.records():
        ids = record.data.get("input_ids") if isinstance(record.data, dict) else None
        if isinstance(ids, list) and tokenized:
            exact += min(len(ids), sequence_len)
            continue
        tokenized = False
        chars = _text_chars(record.data)
        low += min(chars / CHARS_PER_TOKEN[1], sequence_len)
        high += min(chars / CHARS_PER_TOKEN[0], sequence_len)
    if tokenized:
        return DatasetSize(rows=rows, source=path, token_range=(exact, exact), tokens_exact=True)
    return DatasetSize(rows=rows, source=path, token_range=(math.floor(low), math.ceil(high)))


def packed_rows(size: DatasetSize, sequence_len: int | None) -> PackedRows:
    """The number of packed sequences: a central estimate and its bounds."""
    if size.token_range is None or not sequence_len:
        return PackedRows(size.rows, None, size.rows, f"{plural(size.rows, 'unpacked row')} (no token counts)")
    tokens_low, tokens_high = size.token_range
    low = math.ceil(tokens_low / sequence_len)
    high = min(size.rows, math.ceil(tokens_high / (sequence_len * PACKING_FILL_FLOOR)))
    low = min(low, high)
    if size.token_basis:
        basis = size.token_basis
    elif size.tokens_exact:
        basis = f"{tokens_low} tokens"
    else:
        basis = f"{tokens_low}-{tokens_high} tokens estimated from characters"
    basis += f" in sequences of {sequence_len}"
    return PackedRows(round((low + high) / 2), low, high, basis)


def _text_chars(data: Any) -> int:
    """Characters of every string in a row (messages, prompt/completion, text...)."""
    if isinstance(data, str):
        return len(data)
    if isinstance(data, dict):
        return sum(_text_chars(v) for v in data.values())
    if isinstance(data, list):
        return sum(_text_chars(v) for v in data)
    return 0
