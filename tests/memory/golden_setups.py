"""How a golden's recorded setting (tools/memory_goldens.py) reads as the estimator's inputs."""

from __future__ import annotations

from mldebug_cli.memory.batches import micro_batches, pair_batches, shuffled_order, uniform_batch
from mldebug_cli.memory.estimate import estimate
from mldebug_cli.memory.setup import MemorySetup, PeftSetup
from mldebug_cli.memory.shapes import read_model_shape
from support import FIXTURES

MODELS = FIXTURES / "memory-models"
GOLDENS = FIXTURES / "memory-goldens"
SEED = 42  # tools/memory_goldens.py common_args


def golden_setup(setting: dict) -> MemorySetup:
    trainer = setting["trainer"]
    peft = setting.get("peft")
    beta = setting.get("beta", 0.0)
    if trainer == "dpo":
        reference = "adapter-disabled" if peft else "copy"
    elif trainer == "grpo":
        reference = ("adapter-disabled" if peft else "copy") if beta else "none"
    else:
        reference = "none"
    return MemorySetup(
        framework="transformers" if trainer == "hf" else "trl", task="sft" if trainer == "hf" else trainer,
        micro_batch_size=setting["batch"], gradient_checkpointing=setting["gc"],
        compute_dtype="bf16" if setting["bf16"] else setting["weights"], weights_dtype=setting["weights"],
        optimizer="adamw_torch_fused", attention=setting["attn"],
        peft=PeftSetup("lora", peft["r"], peft["target_modules"]) if peft else None,
        loss_kernel="full" if trainer == "hf" else "fused-chunks", reference=reference,
        max_length=setting.get("max_length", 1024), packing=setting.get("packing", False),
        num_generations=setting.get("num_generations"),
        max_completion_length=setting.get("completion"), seed=SEED,
    )


def golden_batches(setting: dict, lengths: list | None) -> list:
    """The micro-batches of the steps the golden ran."""
    steps = setting.get("steps", 3)
    batch = setting["batch"]
    rows = lengths if lengths is not None else setting["rows"]
    order = shuffled_order(len(rows), SEED)
    if setting["trainer"] == "dpo":
        return pair_batches([tuple(r) for r in rows], batch, order=order)[:steps]
    if setting["trainer"] == "grpo":
        prompt = max(rows)
        completion = setting["completion"]
        return [uniform_batch(batch, prompt + completion, batch * completion)]
    return micro_batches(rows, batch, max_length=setting.get("max_length", 1024), order=order,
                         packing=setting.get("packing", False))[:steps]


def golden_estimate(record: dict):
    setting = record["setting"]
    shape = read_model_shape(MODELS / setting["model"])
    setup = golden_setup(setting)
    if setting["trainer"] == "grpo":
        prompt = max(record.get("prepared_lengths") or setting["rows"])
        setup = setup.changed(max_prompt_length=prompt)
    batches = golden_batches(setting, record.get("prepared_lengths"))
    estimates = [estimate(shape, setup, b) for b in batches]
    return max(estimates, key=lambda e: e.allocated)
