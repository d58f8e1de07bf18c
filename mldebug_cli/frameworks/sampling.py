"""A config's batch plan: the trainer's sampler settings (``TrainerFacts.sampler``) over a dataset of ``samples``
rows, or a clear refusal when mldebug does not replay that trainer's order."""

from __future__ import annotations

from mldebug_cli.core.errors import InputError
from mldebug_cli.frameworks.trainer_facts import TrainerFacts
from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

REPLAYED = ("random", "sequential")


def batch_plan(facts: TrainerFacts, samples: int, source: str) -> BatchPlan:
    """The plan of ``facts``' trainer over ``samples`` rows; ``source`` (the config) names the refusal."""
    sampler = facts.sampler
    if sampler is None:
        raise InputError(f"{source}: mldebug does not replay the batch order of {facts.framework} runs",
                         hint="the batch plan replays the transformers Trainer (TRL, plain transformers and LLaMA-Factory configs)")
    if sampler.not_replayed or sampler.order not in REPLAYED:
        raise InputError(f"{source}: the batch order is not replayed: {sampler.not_replayed or sampler.order}",
                         hint="the batch plan replays the trainer's seeded shuffle or dataset order over rows the framework keeps in order")
    if samples < 1:
        raise InputError(f"{source}: the dataset has no rows to plan batches from")
    settings = SamplerSettings(
        samples=samples, micro_batch_size=facts.micro_batch_size,
        gradient_accumulation_steps=facts.gradient_accumulation_steps, world_size=facts.world_size,
        seed=sampler.seed, data_seed=sampler.data_seed, shuffle=sampler.order == "random",
        drop_last=sampler.drop_last, epochs=sampler.epochs, max_steps=sampler.max_steps, rows_note=sampler.rows_note)
    plan = BatchPlan(settings)
    if not plan.micro_batches_per_epoch:
        raise InputError(f"{source}: {samples} rows make no full micro-batch of {facts.micro_batch_size} on "
                         f"{facts.world_size} rank(s) with dataloader_drop_last: the trainer has nothing to train")
    return plan
