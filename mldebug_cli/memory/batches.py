"""The micro-batches a trainer builds from the rows' token lengths, and which one sets the memory peak.

Rules (each the framework's own collator and sampler):
- padding to the longest (TRL ``DataCollatorForLanguageModeling``/``DataCollatorForPreference``, transformers
  ``DataCollatorWithPadding``, axolotl and LLaMA-Factory without ``pad_to_sequence_len``): every sequence of a
  batch is as long as its longest; so the batch holding the longest row is the peak, whatever the order.
- ``pad_to_max_length`` (axolotl ``pad_to_sequence_len``, sample packing): every batch is ``max_length`` long.
- packing (TRL ``packing=True`` with its default ``bfd`` strategy, axolotl multipack): rows are packed into
  sequences of at most ``max_length`` tokens and the batch is flattened padding-free: at most
  ``micro_batch_size × max_length`` tokens (taken as the peak: best-fit packs are nearly full).
- padding-free without packing: the batch is its rows laid end to end: the batch with the most tokens.
- preference pairs (DPO/KTO-style): chosen and rejected are two sequences each, padded to the longer of all
  ``prompt + completion`` sides of the batch.
- order: the batch plan (``mldebug_cli.schedule.batch_plan``: the Trainer's seedable sampler, replayed without
  torch), so the peak batch is named by its rows and the optimizer step it falls on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mldebug_cli.schedule.batch_plan import shuffled_order

__all__ = ["MicroBatch", "micro_batches", "pair_batches", "sequence_batches", "shuffled_order", "uniform_batch"]


@dataclass(frozen=True)
class MicroBatch:
    sequences: int  # sequences in the forward pass (2 per pair for preference rows)
    length: int  # padded length of each sequence (the longest packed/flattened segment when padding-free)
    tokens: int  # positions the model runs
    label_tokens: int  # positions the loss scores
    rows: tuple[int, ...] = ()  # dataset rows in it (0-based)
    step: int | None = None  # optimizer step it runs in (1-based), when the order is known
    padded: bool = False  # sequences of different lengths share a padded batch (an attention mask is built)
    images: tuple[int, ...] = ()  # each image's tokens, for every image the vision tower runs in this batch

    def describe(self) -> str:
        rows = ", ".join(str(r) for r in self.rows[:6]) + (", ..." if len(self.rows) > 6 else "")
        where = f"step {self.step}, " if self.step is not None else ""
        return f"{where}rows {rows}: {self.sequences} × {self.length:,} tokens" if rows else \
            f"{self.sequences} × {self.length:,} tokens"


def uniform_batch(sequences: int, length: int, label_tokens: int | None = None) -> MicroBatch:
    return MicroBatch(sequences, length, sequences * length,
                      sequences * length if label_tokens is None else label_tokens)


Planned = Sequence[tuple[int | None, Sequence[int]]]  # (optimizer step, rows) of each micro-batch


def in_order(count: int, batch_size: int, order: Sequence[int] | None, gradient_accumulation_steps: int) -> Planned:
    """Micro-batches of ``batch_size`` taken in ``order`` on one rank (steps unknown without an order)."""
    index = list(order) if order is not None else list(range(count))
    return [((start // batch_size) // gradient_accumulation_steps + 1 if order is not None else None,
             index[start:start + batch_size]) for start in range(0, len(index), batch_size)]


def micro_batches(lengths: Sequence[int], batch_size: int, *, max_length: int | None, packing: bool = False,
                  padding_free: bool = False, pad_to_max_length: bool = False,
                  order: Sequence[int] | None = None, gradient_accumulation_steps: int = 1,
                  planned: Planned | None = None) -> list[MicroBatch]:
    """Every micro-batch of one epoch of single-sequence rows (``lengths`` already cut to ``max_length``):
    ``planned`` (the batch plan's micro-batches), else ``batch_size`` rows at a time in ``order``."""
    if packing:
        return _packed(lengths, batch_size, max_length or max(lengths, default=1))
    if planned is None:
        planned = in_order(len(lengths), batch_size, order, gradient_accumulation_steps)
    batches = []
    for step, members in planned:
        rows = tuple(members)
        sizes = [lengths[r] for r in rows]
        if padding_free:
            batches.append(MicroBatch(1, sum(sizes), sum(sizes), sum(sizes), rows, step))
            continue
        longest = max_length if pad_to_max_length and max_length else max(sizes)
        batches.append(MicroBatch(len(rows), longest, len(rows) * longest, sum(sizes), rows, step,
                                  padded=len(set(sizes)) > 1 or longest != max(sizes)))
    return batches


def sequence_batches(rows: Sequence[tuple[int, tuple[int, ...], int]], batch_size: int, *,
                     order: Sequence[int] | None = None, gradient_accumulation_steps: int = 1,
                     pad_to: int | None = None, planned: Planned | None = None) -> list[MicroBatch]:
    """Rows of one or more sequences each ``(row, lengths, trained tokens)``, e.g. a preference pair's
    prompt+chosen and prompt+rejected: every sequence of a batch padded to the longest of them (TRL
    ``DataCollatorForPreference``). ``order`` and ``planned`` index ``rows``."""
    if planned is None:
        planned = in_order(len(rows), batch_size, order, gradient_accumulation_steps)
    batches = []
    for step, index in planned:
        members = [rows[i] for i in index]
        sides = [n for _, lengths, _ in members for n in lengths]
        longest = pad_to or max(sides)
        batches.append(MicroBatch(len(sides), longest, len(sides) * longest, sum(t for _, _, t in members),
                                  tuple(r for r, _, _ in members), step, padded=len(set(sides)) > 1))
    return batches


def pair_batches(pairs: Sequence[tuple[int, int, int]], batch_size: int, *, order: Sequence[int] | None = None,
                 gradient_accumulation_steps: int = 1) -> list[MicroBatch]:
    """Preference pairs as ``(prompt, chosen, rejected)`` lengths, rows numbered by position."""
    rows = [(i, (p + c, p + r), c + r) for i, (p, c, r) in enumerate(pairs)]
    return sequence_batches(rows, batch_size, order=order, gradient_accumulation_steps=gradient_accumulation_steps)


def _packed(lengths: Sequence[int], batch_size: int, max_length: int) -> list[MicroBatch]:
    """Packed rows fill sequences of ``max_length`` (best-fit leaves little room), flattened ``batch_size`` at a
    time: the fullest batch has ``batch_size × max_length`` tokens, or all of them in a small dataset."""
    total = sum(min(n, max_length) for n in lengths)
    tokens = min(total, batch_size * max_length)
    return [MicroBatch(1, tokens, tokens, tokens)]
