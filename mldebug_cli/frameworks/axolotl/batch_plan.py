"""The rows axolotl 0.19.0's trainer puts in each optimizer step, over the dataset it hands ``AxolotlTrainer`` (after
tokenizing, merging, ``shuffle_merged_datasets`` and dropping long rows), or a named refusal where the order is not
decided by the config. Verified row for row against axolotl's own trainer and sampler by
``tools/axolotl_batch_plan_goldens.py`` (``fixtures/batch-plan/axolotl-0.19.0.jsonl``).

axolotl's ``_get_train_sampler`` (``core/trainers/base.py``):
- no ``sample_packing`` (or ``pretraining``): the Trainer's own sampler (its seeded shuffle), or with
  ``curriculum_sampling`` a ``SequentialSampler``; ``dataloader_drop_last`` as the config sets it (the causal
  builder), else the Trainer's default (off);
- ``sample_packing``: ``MultipackBatchSampler`` over that order (``mldebug_cli.frameworks.axolotl.multipack``);
- the run length: ``max_steps`` when set, else ``calculate_total_num_steps``: ``ceil(rows × num_epochs /
  batch_size)`` without packing; with packing an estimate from a packing of a *randomly drawn* order (the global
  torch RNG), which the config does not decide: mldebug takes its own seeded order's packing for it and says so.
Refused by name: packing with a shuffled order on several processes. There accelerate's ``BatchSamplerShard`` does
not pass ``set_epoch`` on to the multipack sampler, so every epoch reuses the packing cached when the sampler was
made, in an order drawn from the global torch RNG (found by the goldens; accelerate 1.13 and 1.15 alike).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mldebug_cli.frameworks.axolotl.multipack import (
    DEFAULT_BIN_SIZE,
    DEFAULT_GROUP_SIZE,
    MultipackSettings,
    axolotl_total_steps,
    multipack_plan,
    packed_batches,
)
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

DEFAULT_SEED = 42  # utils/schemas/validation.py: a config without seed gets 42
DEFAULT_EPOCHS = 1.0  # utils/schemas/training.py: num_epochs


class NotReplayed(ValueError):
    """axolotl's order for these settings is not decided by the config (the message says why)."""


@dataclass(frozen=True)
class AxolotlSampling:
    """The config keys that decide axolotl's batches, and the prepared dataset's row count (and token lengths)."""

    rows: int
    micro_batch_size: int = 1
    gradient_accumulation_steps: int = 1
    world_size: int = 1
    seed: int | None = None
    num_epochs: float = DEFAULT_EPOCHS
    max_steps: int | None = None
    dataloader_drop_last: bool | None = None
    eval_sample_packing: bool | None = None
    curriculum_sampling: bool = False
    sample_packing: bool = False
    lengths: tuple[int, ...] | None = None  # tokens per prepared row (needed with sample_packing)
    sequence_len: int = 512
    multipack_real_batches: bool = False
    bin_size: int = DEFAULT_BIN_SIZE
    group_size: int = DEFAULT_GROUP_SIZE
    sequential_packing: bool = False

    @property
    def drop_last(self) -> bool:
        """The causal builder: the config's ``dataloader_drop_last``; with packing and ``eval_sample_packing: false``
        on; else the Trainer's default off."""
        if self.dataloader_drop_last is not None:
            return self.dataloader_drop_last
        return self.sample_packing and self.eval_sample_packing is False

    def packing(self) -> MultipackSettings:
        if self.lengths is None:
            raise NotReplayed("sample_packing packs by token length: the prepared rows' lengths are needed")
        return MultipackSettings(self.lengths, self.sequence_len, self.micro_batch_size, self.multipack_real_batches,
                                 self.bin_size, self.group_size, self.sequential_packing)


def axolotl_plan(s: AxolotlSampling, epoch_batches: int | None = None, max_steps: int | None = None) -> BatchPlan:
    """The plan of ``s``; ``epoch_batches`` (the multipack sampler's length) and ``max_steps`` (what axolotl passed
    the Trainer) where they are known from the run, else mldebug's own (see the module's note)."""
    if s.sample_packing and s.world_size > 1 and not s.curriculum_sampling:
        raise NotReplayed(
            f"sample_packing on {s.world_size} processes: axolotl 0.19.0's multipack sampler is never told the epoch "
            "there (accelerate's BatchSamplerShard does not pass set_epoch on), so every epoch reuses one packing of "
            "an order drawn from the global torch RNG when the sampler is made, which the config does not decide")
    settings = SamplerSettings(
        samples=s.rows, micro_batch_size=s.micro_batch_size, gradient_accumulation_steps=s.gradient_accumulation_steps,
        world_size=s.world_size, seed=DEFAULT_SEED if s.seed is None else s.seed, shuffle=not s.curriculum_sampling,
        drop_last=s.drop_last, epochs=float(s.num_epochs), max_steps=max_steps or s.max_steps or -1)
    if not s.sample_packing:
        if max_steps is None and not s.max_steps:
            settings = _with_steps(settings, axolotl_total_steps(s.rows, s.micro_batch_size,
                                                                 s.gradient_accumulation_steps, s.world_size,
                                                                 float(s.num_epochs)))
        return BatchPlan(settings)
    packing = s.packing()
    if max_steps is None and not s.max_steps:
        settings = _with_steps(settings, packed_total_steps(s, packing))
    return multipack_plan(settings, packing, epoch_batches)


def packed_total_steps(s: AxolotlSampling, packing: MultipackSettings) -> int:
    """``calculate_total_num_steps`` with packing, on mldebug's seeded order instead of axolotl's random draw:
    ``floor(max(1, micro-batches × micro_batch_size // batch_size) × num_epochs)``, less ``ceil(num_epochs)`` with
    ``dataloader_drop_last``; 0 becomes -1."""
    from mldebug_cli.schedule.batch_plan import shuffled_order

    order = list(range(s.rows)) if s.curriculum_sampling else shuffled_order(s.rows, DEFAULT_SEED if s.seed is None
                                                                             else s.seed)
    batches = len(packed_batches(order, packing))
    batch_size = s.micro_batch_size * s.gradient_accumulation_steps * s.world_size
    total = math.floor(max(1, batches * s.micro_batch_size // batch_size) * s.num_epochs)
    if s.dataloader_drop_last:
        total -= math.ceil(s.num_epochs)
    return total or -1


def _with_steps(settings: SamplerSettings, max_steps: int) -> SamplerSettings:
    from dataclasses import replace

    return replace(settings, max_steps=max_steps)
