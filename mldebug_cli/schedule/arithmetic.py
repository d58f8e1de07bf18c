"""Step arithmetic: the Trainer loop's, and what every framework's counting shares.

The Trainer loop (the default counting, :func:`trainer_plan`): the dataloader yields
``ceil(rows / batch)`` micro-batches (``floor`` with ``dataloader_drop_last``), accelerate shards
them over processes (``ceil``, or ``floor`` with drop_last), an epoch has
``ceil(L / accumulation)`` optimizer steps (at least 1; the last window is shorter), and
``T = ceil(epochs * n)`` unless ``max_steps`` is set. A framework that counts otherwise supplies
its own plan on ``RunSpec.counting`` (a :class:`model.StepCounting`, made in its module under
``frameworks/``).
"""

from __future__ import annotations

import math
from dataclasses import replace

from mldebug_cli.core.errors import SETTING_DATASET_SIZE, InputError
from mldebug_cli.schedule.dataset_size import DatasetSize, PackedRows, packed_rows
from mldebug_cli.schedule.model import EPOCH_LOOP_STEPS, RunSpec, StepPlan


def plan_steps(spec: RunSpec, size: DatasetSize | None) -> StepPlan:
    _require_positive(spec)
    rows, packed = training_rows(spec, size)
    plan = _plan_for_rows(spec, rows)
    if packed is None:
        return plan
    if packed.exact:
        return replace(plan, packing_basis=packed.basis)
    low = None if packed.low is None else _plan_for_rows(spec, packed.low).total_steps
    return replace(
        plan,
        total_steps_range=(low, _plan_for_rows(spec, packed.high).total_steps),
        packed_rows_range=(packed.low, packed.high),
        packing_basis=packed.basis,
    )


def _plan_for_rows(spec: RunSpec, rows: int | None) -> StepPlan:
    return (spec.counting.plan or trainer_plan)(spec, rows)


def hf_dataloader_length(rows: int, batch_size: int, world_size: int, drop_last: bool) -> int:
    """Micro-batches per process per epoch, as the Trainer's accelerate-prepared dataloader yields them."""
    batches = rows // batch_size if drop_last else math.ceil(rows / batch_size)
    return batches // world_size if drop_last else math.ceil(batches / world_size)


def grpo_dataloader_length(rows: int, spec: RunSpec) -> int:
    """Micro-batches per process per epoch of GRPOTrainer's dataloader (TRL 1.16): RepeatSampler keeps whole
    generation batches of ``generation_batch_size / num_generations`` prompts (the remainder is never sampled) and
    yields each ``num_iterations * steps_per_generation`` times, one micro-batch per process each time."""
    batching = spec.generation
    assert batching is not None  # a GRPO run's spec
    return (rows // batching.prompts_per_generation) * batching.num_iterations * batching.steps_per_generation


def hf_warmup_steps(spec: RunSpec, total: int) -> int:
    """TrainingArguments.get_warmup_steps: a count, or a ratio below 1 rounded up (warmup_ratio before 5.0)."""
    steps = spec.warmup_steps or 0
    if steps >= 1:
        return int(steps)
    if steps > 0:
        return math.ceil(total * steps)
    if spec.warmup_ratio:
        return math.ceil(total * spec.warmup_ratio)
    return 0


def held_out_rows(rows: int, split: float | None) -> int:
    """Rows `datasets.train_test_split` moves to the eval set: a count, or a share rounded up."""
    if not split:
        return 0
    return min(rows, int(split) if split >= 1 else math.ceil(rows * split))


def rows_after_max_samples(size: DatasetSize, max_samples: int | None) -> int:
    """LLaMA-Factory caps each dataset at ``max_samples`` on its own before merging them (data/loader.py,
    ``_load_single_dataset``): 91, 999 and 300 rows under max_samples 1000 train on 1,390. The cap keeps a file's
    first rows before its converter and processor drop any, so where every row was read the rows that train are the
    kept ones among the first ``max_samples`` (tests/schedule/test_llama_factory_max_samples.py holds it to
    LLaMA-Factory 0.9.5's own loader)."""
    parts = size.per_dataset or (size.rows,)
    if max_samples is None:
        return sum(parts)
    if size.kept_rows and len(size.kept_rows) == len(parts):
        return sum(sum(1 for row in kept if row < max_samples) for kept in size.kept_rows)
    return sum(min(rows, max_samples) for rows in parts)


def training_rows(spec: RunSpec, size: DatasetSize | None) -> tuple[int | None, PackedRows | None]:
    """Rows the training dataloader iterates (packed sequences when packing is on)."""
    if size is None:
        return None, None
    if not size.rows and size.loaded and spec.merge is None:  # rows were read and none trains: no count
        return None, None
    if spec.merge is not None and size.loaded and len(size.loaded) == len(size.per_dataset or (size.rows,)):
        from mldebug_cli.schedule.merging import merged_rows

        kept = merged_rows(spec.merge, size).train  # merged and split before the drops, as the loader does
    else:
        rows = rows_after_max_samples(size, spec.max_samples)
        kept = rows - held_out_rows(rows, spec.validation_split)
    if not spec.packing.enabled:
        return kept, None
    packed = packed_rows(size, spec.packing.sequence_len)
    if size.lengths and spec.packing.sequence_len:
        from mldebug_cli.schedule.packing import packed_from_lengths

        packed = packed_from_lengths(spec.packing.packs_every_row, size, spec.packing.sequence_len)
    share = kept / size.rows if size.rows else 0.0  # the packer only sees the rows left for training
    scaled = PackedRows(
        estimate=math.ceil(packed.estimate * share),
        low=None if packed.low is None else math.ceil(packed.low * share),
        high=math.ceil(packed.high * share),
        basis=packed.basis,
        exact=packed.exact and share == 1,
    )
    return scaled.estimate, scaled


def _require_positive(spec: RunSpec) -> None:
    for label, key, value in (
        ("batch size", "batch_size", spec.batch_size),
        ("gradient accumulation", "grad_accum", spec.grad_accum),
    ):
        if value is None or value < 1:
            raise InputError(f"{spec.key(key) or label} must be at least 1, got {value}")


def missing_rows(spec: RunSpec) -> InputError:
    return InputError(
        "the step count needs the dataset size",
        hint="pass --num-rows N or --dataset PATH" + ("" if spec.counting.kind == EPOCH_LOOP_STEPS else ", or set max_steps"),
        setting=SETTING_DATASET_SIZE,
    )


def trainer_plan(spec: RunSpec, rows: int | None, max_steps: int | None = None) -> StepPlan:
    """The Trainer loop's plan for ``rows`` training rows (None: unknown), ``max_steps`` standing in for the spec's."""
    max_steps = spec.max_steps if max_steps is None else max_steps
    if rows is None:
        if max_steps <= 0:
            raise missing_rows(spec)
        return StepPlan(
            train_rows=None, micro_batches_per_epoch=None, optimizer_steps_per_epoch=None, total_steps=max_steps,
            steps_run=max_steps, warmup_steps=hf_warmup_steps(spec, max_steps), epochs_requested=spec.num_epochs,
            epochs_run=None, epoch_loops=None,
        )
    if spec.generation is not None:
        length = grpo_dataloader_length(rows, spec)
    else:
        length = hf_dataloader_length(rows, spec.batch_size, spec.world_size, spec.drop_last)
    per_epoch = max(length // spec.grad_accum + int(length % spec.grad_accum > 0), 1)
    total = max_steps if max_steps > 0 else math.ceil(spec.num_epochs * per_epoch)
    steps_run = total if length > 0 else 0  # an empty dataloader: the Trainer stops before step 1
    loops = math.ceil(total / per_epoch) if max_steps > 0 else math.ceil(spec.num_epochs)
    return StepPlan(
        train_rows=rows,
        micro_batches_per_epoch=length,
        optimizer_steps_per_epoch=per_epoch,
        total_steps=total if (length > 0 or max_steps > 0) else 0,
        steps_run=steps_run,
        warmup_steps=hf_warmup_steps(spec, total),
        epochs_requested=spec.num_epochs,
        epochs_run=hf_epoch_after(steps_run, length, per_epoch, spec.grad_accum) if steps_run else 0.0,
        epoch_loops=loops,
        leftover_micro_batches=length % spec.grad_accum if length else 0,
    )


def hf_epoch_after(step: int, length: int, per_epoch: int, grad_accum: int) -> float:
    """The Trainer's ``state.epoch`` after optimizer step ``step``: epoch + micro-batches seen / L."""
    epoch, in_epoch = divmod(step - 1, per_epoch)
    return epoch + min((in_epoch + 1) * grad_accum, length) / length


def step_positions(spec: RunSpec, plan: StepPlan, steps=None) -> list[tuple[float | None, int | None]]:
    """(epoch, micro-batches consumed per process) after each optimizer step that runs (or each of ``steps``)."""
    return [step_position(spec, plan, step) for step in (steps or range(1, plan.steps_run + 1))]


def step_position(spec: RunSpec, plan: StepPlan, step: int) -> tuple[float | None, int | None]:
    """(epoch, micro-batches consumed per process) after optimizer step ``step``."""
    length, per_epoch = plan.micro_batches_per_epoch, plan.optimizer_steps_per_epoch
    if not length or not per_epoch:
        return None, step * spec.grad_accum
    epoch, in_epoch = divmod(step - 1, per_epoch)
    seen = min((in_epoch + 1) * spec.grad_accum, length)
    return epoch + seen / length, epoch * length + seen
