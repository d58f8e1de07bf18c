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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mldebug_cli.frameworks.axolotl.multipack import (
    DEFAULT_BIN_SIZE,
    DEFAULT_GROUP_SIZE,
    MultipackSettings,
    axolotl_total_steps,
    multipack_plan,
    packed_batches,
)
from mldebug_cli.frameworks.axolotl.prepare import (
    DEFAULT_MIN_SAMPLE_LEN,
    EncodedRow,
    NotPrepared,
    Preparation,
    prepared_rows,
)
from mldebug_cli.schedule.batch_plan import BatchPlan, KeptRow, PlanRefused, PreparedPlan, SamplerSettings
from mldebug_cli.sources.config_file import ConfigFile

DEFAULT_SEED = 42  # utils/schemas/validation.py: a config without seed gets 42
DEFAULT_EPOCHS = 1.0  # utils/schemas/training.py: num_epochs


class NotReplayed(PlanRefused):
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


# utils/schemas/enums.py: ATTN_IMPLS_SUPPORTING_PACKING, and the legacy flags' implementations (in their priority)
PACKING_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3", "flash_attention_4", "flash_attention_torch",
                               "flex_attention", "xformers", "sage", "kernels-community/flash-attn2",
                               "kernels-community/flash-attn3", "kernels-community/sage-attention"})
LEGACY_ATTENTION = (("xformers_attention", "xformers"), ("sage_attention", "sage"), ("flex_attention", "flex_attention"),
                    ("flash_attention", "flash_attention_2"), ("sdp_attention", "sdpa"), ("eager_attention", "eager"))
PLANNED_STRATEGY = "drop"  # the length filter mldebug's row encoding applies (frameworks.axolotl.prompters)


def _attention(config: Mapping[str, Any]) -> str | None:
    named = config.get("attn_implementation")
    if isinstance(named, str):
        return named.split(":", 1)[0].split("@", 1)[0].strip()
    return next((impl for flag, impl in LEGACY_ATTENTION if config.get(flag)), None)


def _number(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def sampling_of_config(config: Mapping[str, Any], lengths: Sequence[int], world_size: int) -> AxolotlSampling:
    """The sampler settings a config gives axolotl's trainer over prepared rows of ``lengths`` tokens (core/builders
    causal.py: ``multipack_real_batches`` unset is on unless the attention packs)."""
    real = config.get("multipack_real_batches")
    max_steps = config.get("max_steps")
    return AxolotlSampling(
        rows=len(lengths), micro_batch_size=int(_number(config, "micro_batch_size", 1)),
        gradient_accumulation_steps=int(_number(config, "gradient_accumulation_steps", 1)), world_size=world_size,
        seed=config.get("seed") if isinstance(config.get("seed"), int) else None,
        num_epochs=_number(config, "num_epochs", DEFAULT_EPOCHS),
        max_steps=max_steps if isinstance(max_steps, int) and max_steps > 0 else None,
        dataloader_drop_last=config.get("dataloader_drop_last"), eval_sample_packing=config.get("eval_sample_packing"),
        curriculum_sampling=bool(config.get("curriculum_sampling")), sample_packing=bool(config.get("sample_packing")),
        lengths=tuple(lengths), sequence_len=int(_number(config, "sequence_len", 2048)),
        multipack_real_batches=bool(real) if real is not None else _attention(config) not in PACKING_ATTENTION,
        bin_size=int(_number(config, "sample_packing_bin_size", DEFAULT_BIN_SIZE)),
        group_size=int(_number(config, "sample_packing_group_size", DEFAULT_GROUP_SIZE)),
        sequential_packing=bool(config.get("sample_packing_sequentially")))


def config_plan(config: ConfigFile, world_size: int, kept: Sequence[KeptRow], total: int) -> PreparedPlan:
    """The batch plan of an axolotl config over one dataset file of ``total`` rows, of which mldebug's encoding keeps
    ``kept`` (rows outside ``[2, sequence_len]`` tokens left out, as axolotl's default length filter does): axolotl's
    preparation (``frameworks.axolotl.prepare``) then its sampler; a ``PlanRefused`` says what is not replayed."""
    data = config.data
    datasets = data.get("datasets") or []
    if isinstance(datasets, list) and len(datasets) > 1:
        raise NotPrepared(f"the config merges {len(datasets)} datasets: the batch plan is made over one dataset file")
    for key in ("pretraining_dataset", "streaming", "dataset_shard_num", "datasets.0.shards"):
        if config.get(key):
            raise NotPrepared(f"{key} is set: the batch plan does not replay axolotl's streaming or sharded datasets")
    preparation = Preparation.of_config(data)
    if preparation.excess_length_strategy != PLANNED_STRATEGY or preparation.min_length != DEFAULT_MIN_SAMPLE_LEN:
        raise NotPrepared(f"excess_length_strategy {preparation.excess_length_strategy} with min_sample_len "
                          f"{preparation.min_length}: mldebug encodes rows with axolotl's default length filter "
                          f"(drop outside [{DEFAULT_MIN_SAMPLE_LEN}, sequence_len])")
    by_row = {row: (tokens, trained) for row, tokens, trained in kept}
    # a row mldebug leaves out is given 0 tokens: axolotl's length filter drops it after the shuffle, as it does
    rows = [EncodedRow(0, r, by_row.get(r, (0, 0))[0], by_row.get(r, (0, 0))[1] > 0) for r in range(total)]
    train, _ = prepared_rows([rows], preparation)
    if not train:
        raise NotPrepared("no row is left for training after axolotl's preparation")
    plan = axolotl_plan(sampling_of_config(data, [r.length for r in train], world_size))
    return PreparedPlan(plan, tuple(r.row for r in train), preparation.describe())
