"""Held-out GPU goldens for `mldebug memory`: blind estimates first, measurements later, scored apart.

The 25 settings below were never used to build or fit the estimator (tools/memory_goldens.py holds the 17 it was
checked on). Four model families are new to it (Gemma 3, Qwen3, SmolLM2, Phi-3), and the settings cover what the
earlier goldens did not: bitsandbytes 4-bit QLoRA, 8-bit and paged 8-bit AdamW, Liger's fused cross-entropy,
DeepSpeed ZeRO-2/3 (and ZeRO-3 with the optimizer offloaded) on one GPU, DPO, KTO and GRPO, long rows among short
ones, packing.

Three steps, in this order:

    # 1. on CPU, before any GPU run: the estimator's blind numbers, committed with the estimator that made them
    python tools/memory_gpu_goldens.py --estimate            # writes fixtures/memory-gpu-goldens/blind.json

    # 2. on one GPU (a few minutes: 4 settings at a time, each in its own process; peaks are per process)
    python tools/memory_gpu_goldens.py --device cuda --jobs 4 --out /tmp/held-out
    python tools/memory_gpu_goldens.py --device cpu --only sft-q3-full-gc --out /tmp/smoke   # tiny smoke run

    # 3. score: blind error (the committed estimates) and, separately, the current estimator's error
    python tools/memory_gpu_goldens.py --score /tmp/held-out

A setting whose library is not installed on the GPU machine (bitsandbytes, deepspeed, liger-kernel) is recorded
as failed with the reason and left out of the score. The measured figure is ``torch.cuda.max_memory_allocated()``
over the run, compared with the estimate's allocated peak; ``max_memory_reserved`` and the CUDA context are recorded
too, and a run that runs out of memory is checked against the estimate's verdict for that GPU.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import memory_goldens as base  # noqa: E402  (the runner: one process per setting, the trainers, the recorder)

BLIND = ROOT / "fixtures" / "memory-gpu-goldens" / "blind.json"
LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear"}
ZERO2 = {"zero_optimization": {"stage": 2}, "bf16": {"enabled": True}, "train_micro_batch_size_per_gpu": "auto",
         "gradient_accumulation_steps": "auto"}
ZERO3 = {"zero_optimization": {"stage": 3}, "bf16": {"enabled": True}, "train_micro_batch_size_per_gpu": "auto",
         "gradient_accumulation_steps": "auto"}
ZERO3_OFFLOAD = {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": True},
                 "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto"}
SFT = dict(trainer="sft", weights="bf16", bf16=True, attn="sdpa")


def _rows(n: int, length: int) -> list[int]:
    return [length] * n


HELD_OUT: dict[str, dict] = {
    # new families, LoRA and full
    "sft-g3-lora-gc": dict(SFT, model="gemma-3-1b", gc=True, batch=4, rows=_rows(12, 1024), peft=LORA),
    "sft-g3-full-nogc": dict(SFT, model="gemma-3-1b", gc=False, batch=2, rows=_rows(6, 512)),
    "sft-q3-full-gc": dict(SFT, model="qwen3-0.6b", gc=True, batch=8, rows=_rows(24, 1024)),
    "sft-q3-lora-eager": dict(SFT, model="qwen3-0.6b", gc=False, batch=4, attn="eager", rows=_rows(12, 512), peft=LORA),
    "hf-smol-full-fp32amp": dict(trainer="hf", model="smollm2-360m", weights="fp32", bf16=True, attn="sdpa", gc=False,
                                 batch=8, rows=_rows(24, 512)),
    "sft-phi3-lora-gc": dict(SFT, model="phi-3-mini", gc=True, batch=4, rows=_rows(12, 1024), peft=LORA),
    # bitsandbytes 4-bit QLoRA (nf4, double quantisation, bf16 compute)
    "sft-phi3-qlora": dict(SFT, model="phi-3-mini", gc=True, batch=4, rows=_rows(12, 1024), peft=LORA, quant="4bit"),
    "sft-q3-qlora": dict(SFT, model="qwen3-0.6b", gc=True, batch=8, rows=_rows(24, 1024), peft=LORA, quant="4bit"),
    "sft-l1-qlora-nogc": dict(SFT, model="llama-3.2-1b", gc=False, batch=2, rows=_rows(6, 1024), peft=LORA,
                              quant="4bit"),
    # 8-bit optimizers
    "sft-q3-full-adam8bit": dict(SFT, model="qwen3-0.6b", gc=True, batch=8, rows=_rows(24, 1024), optim="adamw_8bit"),
    "sft-smol-full-paged8bit": dict(SFT, model="smollm2-360m", gc=True, batch=8, rows=_rows(24, 1024),
                                    optim="paged_adamw_8bit"),
    # Liger's fused linear cross-entropy
    "hf-q3-full-liger": dict(trainer="hf", model="qwen3-0.6b", weights="bf16", bf16=True, attn="sdpa", gc=True,
                             batch=8, rows=_rows(24, 1024), liger=True),
    "hf-smol-lora-liger": dict(trainer="hf", model="smollm2-360m", weights="bf16", bf16=True, attn="sdpa", gc=False,
                               batch=8, rows=_rows(24, 1024), liger=True, peft=LORA),
    # DeepSpeed on one GPU
    "sft-q05-full-zero2": dict(SFT, model="qwen2.5-0.5b", gc=True, batch=8, rows=_rows(24, 1024), deepspeed=ZERO2),
    "sft-q3-full-zero3": dict(SFT, model="qwen3-0.6b", gc=True, batch=8, rows=_rows(24, 1024), deepspeed=ZERO3),
    "sft-smol-full-zero3-offload": dict(SFT, model="smollm2-360m", gc=True, batch=8, rows=_rows(24, 1024),
                                        deepspeed=ZERO3_OFFLOAD),
    # preference and RL trainers
    "dpo-q3-lora": dict(trainer="dpo", model="qwen3-0.6b", weights="bf16", bf16=True, attn="sdpa", gc=True, batch=4,
                        rows=[(256, 512, 384)] * 12, peft=LORA),
    "dpo-smol-full": dict(trainer="dpo", model="smollm2-360m", weights="bf16", bf16=True, attn="sdpa", gc=True,
                          batch=2, rows=[(128, 256, 256)] * 6),
    "kto-q3-lora": dict(trainer="kto", model="qwen3-0.6b", weights="bf16", bf16=True, attn="sdpa", gc=True, batch=8,
                        rows=[(256, 384)] * 24, peft=LORA),
    "kto-smol-full": dict(trainer="kto", model="smollm2-360m", weights="bf16", bf16=True, attn="sdpa", gc=True,
                          batch=4, rows=[(128, 256)] * 12),
    "grpo-q3-lora": dict(trainer="grpo", model="qwen3-0.6b", weights="bf16", bf16=True, attn="sdpa", gc=True, batch=8,
                         num_generations=8, completion=256, rows=[64] * 16, steps=2, peft=LORA),
    "grpo-smol-full-beta": dict(trainer="grpo", model="smollm2-360m", weights="bf16", bf16=True, attn="sdpa", gc=True,
                                batch=8, num_generations=8, completion=384, rows=[48] * 16, steps=2, beta=0.04),
    # long rows among short ones, packing
    "sft-q3-lora-longrow": dict(SFT, model="qwen3-0.6b", gc=True, batch=4, peft=LORA, max_length=8192, steps=6,
                                rows=[200 + (i * 53) % 300 for i in range(23)] + [8000]),
    "sft-smol-full-longrows": dict(SFT, model="smollm2-360m", gc=False, batch=4, max_length=4096, steps=8,
                                   rows=[256] * 30 + [4096] * 2),
    "sft-g3-lora-packing": dict(SFT, model="gemma-3-1b", gc=True, batch=4, peft=LORA, packing=True, max_length=1024,
                                rows=[100 + (i * 97) % 700 for i in range(48)]),
}
TOKENIZER = "qwen2.5-instruct"  # pad id, DPO/KTO words and GRPO prompts only; every model's vocabulary is larger


# ------------------------------------------------------------------------------------------------- the blind side


def setup_of(setting: dict):
    from mldebug_cli.memory.setup import MemorySetup, PeftSetup

    trainer = setting["trainer"]
    peft = setting.get("peft")
    quant = setting.get("quant")
    ds = setting.get("deepspeed") or {}
    zero = ds.get("zero_optimization", {})
    beta = setting.get("beta", 0.0)
    if trainer in ("dpo", "kto"):
        reference = "adapter-disabled" if peft else "copy"
    elif trainer == "grpo":
        reference = ("adapter-disabled" if peft else "copy") if beta else "none"
    else:
        reference = "none"
    kernel = "liger" if setting.get("liger") else ("full" if trainer == "hf" else "fused-chunks")
    return MemorySetup(
        framework="transformers" if trainer == "hf" else "trl", task="sft" if trainer == "hf" else trainer,
        micro_batch_size=setting["batch"], gradient_checkpointing=setting["gc"],
        compute_dtype="bf16" if setting["bf16"] else setting["weights"], weights_dtype=setting["weights"],
        quantization=quant, double_quant=bool(quant), optimizer=setting.get("optim", "adamw_torch_fused"),
        attention=setting["attn"], peft=PeftSetup("lora", peft["r"], peft["target_modules"]) if peft else None,
        loss_kernel=kernel, reference=reference, max_length=setting.get("max_length", 1024),
        packing=setting.get("packing", False), num_generations=setting.get("num_generations"),
        max_completion_length=setting.get("completion"), seed=42,
        zero_stage=int(zero.get("stage", 0)), offload_optimizer="offload_optimizer" in zero,
        adapter_dtype="bf16" if quant and trainer != "hf" else "fp32",
        unquantized_dtype=setting["weights"] if quant and trainer != "hf" else None,
    )


def batches_of(setting: dict, lengths: list | None = None) -> list:
    from mldebug_cli.memory.batches import micro_batches, pair_batches, sequence_batches, shuffled_order, uniform_batch

    steps = setting.get("steps", 3)
    batch = setting["batch"]
    rows = lengths if lengths is not None else setting["rows"]
    order = shuffled_order(len(rows), 42)
    if setting["trainer"] == "dpo":
        return pair_batches([tuple(r) for r in rows], batch, order=order)[:steps]
    if setting["trainer"] == "kto":  # each row is its completion and a mismatched one for the KL term
        rows2 = [(i, (p + c, p + c), c) for i, (p, c) in enumerate(rows)]
        return sequence_batches(rows2, batch, order=order)[:steps]
    if setting["trainer"] == "grpo":
        return [uniform_batch(batch, max(rows) + setting["completion"], batch * setting["completion"])]
    return micro_batches(rows, batch, max_length=setting.get("max_length", 1024), order=order,
                         packing=setting.get("packing", False))[:steps]


def estimate_of(setting: dict, lengths: list | None = None):
    from mldebug_cli.memory.estimate import estimate
    from mldebug_cli.memory.shapes import read_model_shape

    shape = read_model_shape(base.MODELS / setting["model"])
    setup = setup_of(setting)
    if setting["trainer"] == "grpo":
        setup = setup.changed(max_prompt_length=max(lengths or setting["rows"]))
    return max((estimate(shape, setup, b) for b in batches_of(setting, lengths)), key=lambda e: e.allocated)


def write_blind() -> None:
    import subprocess

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    out = {}
    for name, setting in HELD_OUT.items():
        e = estimate_of(setting)
        out[name] = {"allocated": e.allocated, "per_gpu": e.per_gpu, "peak_moment": e.peak_moment,
                     "largest": e.largest.name}
    BLIND.parent.mkdir(parents=True, exist_ok=True)
    BLIND.write_text(json.dumps({"estimator_commit_parent": commit, "note": "written before any GPU run of these "
                                 "settings; allocated is compared with torch.cuda.max_memory_allocated",
                                 "estimates": out}, indent=1) + "\n")
    print(f"{len(out)} blind estimates → {BLIND}")


def score(folder: Path) -> None:
    blind = json.loads(BLIND.read_text())["estimates"]
    rows = []
    for name, setting in HELD_OUT.items():
        path = folder / f"{name}.json"
        record = json.loads(path.read_text()) if path.exists() else {"failed": "not measured"}
        if "failed" in record:
            print(f"{name:30} not scored: {record['failed'][:120]}")
            continue
        if record.get("oom"):
            fits = blind[name]["per_gpu"] <= record.get("gpu_total", 0)
            print(f"{name:30} OOM on the GPU; blind verdict {'fits (WRONG)' if fits else 'does not fit'}")
            continue
        measured = record["max_memory_allocated"]
        now = estimate_of(setting, record.get("prepared_lengths")).allocated
        rows.append((name, measured, (blind[name]["allocated"] - measured) / measured, (now - measured) / measured))
        print(f"{name:30} measured {measured / 2**30:7.2f} GiB  blind {rows[-1][2]:+7.1%}  now {rows[-1][3]:+7.1%}")
    for label, index in (("blind", 2), ("current estimator", 3)):
        errors = [abs(r[index]) for r in rows]
        if errors:
            print(f"{label}: {len(errors)} runs, median |error| {statistics.median(errors):.1%}, max {max(errors):.1%}")


# ---------------------------------------------------------------------------------------------- the measuring side


def _make_trainer(setting, model, tokenizer, device, out_dir, callback, shapes):
    """memory_goldens.make_trainer, with the options the held-out settings add."""
    extra: dict = {}
    if setting.get("optim"):
        extra["optim"] = setting["optim"]
    if setting.get("liger"):
        extra["use_liger_kernel"] = True
    if setting.get("deepspeed"):
        _single_process_group()
        path = Path(out_dir) / "ds.json"
        path.write_text(json.dumps(setting["deepspeed"]))
        extra["deepspeed"] = str(path)
    original = base.common_args
    base.common_args = lambda s, o, d: {**original(s, o, d), **extra}
    try:
        if setting["trainer"] == "kto":
            return _kto_trainer(setting, model, tokenizer, device, out_dir, callback, shapes)
        return _original_make_trainer(setting, model, tokenizer, device, out_dir, callback, shapes)
    finally:
        base.common_args = original


def _kto_trainer(setting, model, tokenizer, device, out_dir, callback, shapes):
    from datasets import Dataset
    from peft import LoraConfig
    from trl import KTOConfig, KTOTrainer

    def words(word, n):
        return word + f" {word}" * (n - 1)

    data = {"prompt": [], "completion": [], "label": []}
    for i, (p, c) in enumerate(setting["rows"]):
        data["prompt"].append(words("the", p))
        data["completion"].append(" " + words("yes" if i % 2 else "no", c - 1))
        data["label"].append(bool(i % 2))
    peft_config = LoraConfig(task_type="CAUSAL_LM", **setting["peft"]) if setting.get("peft") else None
    if peft_config is None:
        model.save_pretrained(Path(out_dir) / "policy")
        model.config._name_or_path = str(Path(out_dir) / "policy")
    config = KTOConfig(max_length=setting.get("max_length", 1024), **base.common_args(setting, out_dir, device))
    trainer = KTOTrainer(model=model, args=config, train_dataset=Dataset.from_dict(data), processing_class=tokenizer,
                         peft_config=peft_config, callbacks=[callback])
    trainer.data_collator = base.recording_collator(trainer.data_collator, shapes)
    return trainer


def _build_model(setting: dict, device: str, tiny: bool):
    """A random model from the config; for 4-bit, saved and reloaded through bitsandbytes (quantised on load)."""
    if not setting.get("quant") or device != "cuda":
        return _original_build_model(setting, device, tiny)
    import torch
    from transformers import AutoModelForCausalLM, BitsAndBytesConfig

    model = _original_build_model(setting, "cpu", tiny)
    folder = tempfile.mkdtemp()
    model.save_pretrained(folder)
    quant = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                               bnb_4bit_compute_dtype=torch.bfloat16)
    return AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant, dtype=torch.bfloat16,
                                                device_map={"": 0}, attn_implementation=setting["attn"])


_original_make_trainer = base.make_trainer
_original_build_model = base.build_model


def install() -> None:
    """Point the shared runner at the held-out settings and the added options."""
    base.SETTINGS = HELD_OUT
    base.TOKENIZER_OF = {name: TOKENIZER for name in {s["model"] for s in HELD_OUT.values()}}
    base.make_trainer = _make_trainer
    base.build_model = _build_model
    base.__file__ = __file__  # run_in_process starts this script for each setting


def _single_process_group() -> None:
    """DeepSpeed on one GPU: a process group of one, on a free port (settings run side by side)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1"),
                       ("MASTER_PORT", str(port))):
        os.environ.setdefault(key, value)


def main() -> None:
    if "--estimate" in sys.argv:
        write_blind()
        return
    if "--score" in sys.argv:
        score(Path(sys.argv[sys.argv.index("--score") + 1]))
        return
    install()
    if "--out" not in sys.argv and "--run-one" not in sys.argv:
        sys.argv += ["--out", str(Path(tempfile.gettempdir()) / "memory-gpu-goldens")]
    base.main()


if __name__ == "__main__":  # the other flags are memory_goldens'; --estimate and --score are read here
    main()
