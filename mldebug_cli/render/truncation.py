"""Truncation to the max length the way each trainer does it (each framework profile names its mode).

- ``keep_start`` (transformers, and TRL: ``frameworks/trl/framework.py`` adds its dropping of rows left untrained):
  keep the first ``max_length`` tokens.
- ``drop`` (axolotl's default ``excess_length_strategy``): a longer row is left out of training.
- ``pairs`` (LLaMA-Factory): each (prompt, response) pair gets a share of the remaining budget by
  ``infer_seqlen``, so a long prompt is cut to leave room for its response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Truncated:
    ids: list[int]
    labels: list[int]
    cut_ids: list[int]  # what truncation removed
    cut_labels: list[int]
    dropped: bool = False  # the whole row is left out
    dropped_by: str = "length"  # why: "length" (too long) or "nothing-trained" (no trained token left)


def truncate(
    ids: list[int], labels: list[int], max_length: int | None, mode: str, turns: Sequence[tuple[int, int]] = ()
) -> Truncated:
    """``turns`` are the assistant turns' token ranges [start, end), needed by ``pairs``."""
    if max_length is None or len(ids) <= max_length:
        return Truncated(ids, labels, [], [])
    if mode == "drop":
        return Truncated(ids, labels, [], [], dropped=True)
    if mode == "pairs" and turns:
        keep = _pair_positions(len(ids), max_length, turns)
        kept = set(keep)
        cut = [p for p in range(len(ids)) if p not in kept]
        return Truncated([ids[p] for p in keep], [labels[p] for p in keep], [ids[p] for p in cut], [labels[p] for p in cut])
    if mode == "keep_end":  # TRL's truncation_mode="keep_end": the last max_length tokens
        return Truncated(ids[-max_length:], labels[-max_length:], ids[:-max_length], labels[:-max_length])
    return Truncated(ids[:max_length], labels[:max_length], ids[max_length:], labels[max_length:])


def infer_seqlen(source: int, target: int, budget: int) -> tuple[int, int]:
    """LLaMA-Factory's split of a budget between a prompt and its response."""
    if 2 * target < budget:
        max_target = budget
    elif 2 * source < budget:
        max_target = budget - source
    else:
        max_target = int(budget * (target / (source + target)))
    new_target = min(max_target, target)
    new_source = min(max(budget - new_target, 0), source)
    return new_source, new_target


def _pair_positions(length: int, max_length: int, turns: Sequence[tuple[int, int]]) -> list[int]:
    """Positions kept when each prompt/response pair is truncated in turn (the tail joins the last response)."""
    pairs, previous = [], 0
    ordered = sorted(t for t in turns if t[1] > t[0])
    for n, (start, end) in enumerate(ordered):
        end = length if n == len(ordered) - 1 else end
        pairs.append((range(previous, start), range(start, end)))
        previous = end
    keep: list[int] = []
    for source, target in pairs:
        budget = max_length - len(keep)
        if budget <= 0:
            break
        keep_source, keep_target = infer_seqlen(len(source), len(target), budget)
        keep += list(source[:keep_source]) + list(target[:keep_target])
    return keep
