"""Write fixtures/memory-goldens/*.json: the GPU memory real trainers use, to test `mldebug memory` against.

Not run in CI (it needs a GPU). tests/memory/test_memory_goldens.py reads what this wrote and checks that the
estimator's peak is within 10% of the measured ``torch.cuda.max_memory_allocated()`` and that its verdict
(fits / does not fit) is right.

Usage (offline; models are randomly initialised from the configs in fixtures/memory-models/, nothing is
downloaded):

    pip install trl==1.16.0 peft==0.21.2
    python tools/memory_goldens.py --device cuda --out fixtures/memory-goldens      # all settings
    python tools/memory_goldens.py --device cpu --out /tmp/mg                         # tiny shapes, a smoke run
    python tools/memory_goldens.py --device cuda --only sft-q05-full,dpo-q05-lora

Each setting runs in its own process (so its peak is its own): it builds the model from the config with
``from_config`` (``--device cpu`` shrinks it to 2 layers of width 64), moves it to the device, builds the real
trainer (transformers ``Trainer``, TRL ``SFTTrainer``, ``DPOTrainer``, ``GRPOTrainer``) on generated rows of known
token lengths and trains a few steps. It records ``max_memory_allocated``/``max_memory_reserved`` over the whole
run and per optimizer step, the memory the weights took, the process's device memory outside PyTorch's
allocator (CUDA context), the shapes of the batches the trainer's collator built, and the library versions.
A setting that runs out of memory is recorded as ``"oom": true``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "fixtures" / "memory-models"
TOKENIZERS = ROOT / "fixtures" / "tokenizers"
RECORDED = ("torch", "transformers", "trl", "peft", "accelerate", "datasets")
TOKENIZER_OF = {"qwen2.5-0.5b": "qwen2.5-instruct", "qwen2.5-1.5b": "qwen2.5-instruct", "llama-3.2-1b": "llama3-instruct"}
LORA = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear"}

# name -> setting. trainer: hf | sft | dpo | grpo. weights: the dtype the model is built in; bf16: mixed precision
# flag. rows: token lengths of the rows (SFT/HF), or (prompt, chosen, rejected) lengths (DPO), or prompt length
# (GRPO). The batch is per_device_train_batch_size (completions for GRPO).
SETTINGS: dict[str, dict] = {
    "hf-q05-full-fp32amp": dict(trainer="hf", model="qwen2.5-0.5b", weights="fp32", bf16=True, attn="sdpa",
                                gc=False, batch=4, rows=[512] * 16),
    "hf-q05-full-fp32amp-eager": dict(trainer="hf", model="qwen2.5-0.5b", weights="fp32", bf16=True, attn="eager",
                                      gc=False, batch=4, rows=[512] * 16),
    "hf-q05-full-fp32amp-gc": dict(trainer="hf", model="qwen2.5-0.5b", weights="fp32", bf16=True, attn="sdpa",
                                   gc=True, batch=4, rows=[512] * 16),
    "hf-l1-full-bf16": dict(trainer="hf", model="llama-3.2-1b", weights="bf16", bf16=True, attn="sdpa",
                            gc=False, batch=2, rows=[1024] * 8),
    "sft-q05-full": dict(trainer="sft", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                         gc=True, batch=8, rows=[1024] * 32),
    "sft-q05-full-nogc": dict(trainer="sft", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                              gc=False, batch=8, rows=[1024] * 32),
    "sft-q15-lora": dict(trainer="sft", model="qwen2.5-1.5b", weights="bf16", bf16=True, attn="sdpa",
                         gc=True, batch=8, rows=[1024] * 32, peft=LORA),
    "sft-q15-lora-nogc-eager": dict(trainer="sft", model="qwen2.5-1.5b", weights="bf16", bf16=True, attn="eager",
                                    gc=False, batch=4, rows=[1024] * 16, peft=LORA),
    "sft-l1-lora-varlen": dict(trainer="sft", model="llama-3.2-1b", weights="bf16", bf16=True, attn="sdpa",
                               gc=False, batch=4, peft=LORA, max_length=4096, steps=6,
                               rows=[128 + (i * 37) % 384 for i in range(23)] + [2048]),
    "sft-q05-full-packing": dict(trainer="sft", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                                 gc=True, batch=4, packing=True, rows=[100 + (i * 89) % 600 for i in range(64)]),
    "dpo-q05-lora": dict(trainer="dpo", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                         gc=True, batch=4, rows=[(128, 384, 256)] * 16, peft=LORA),
    "grpo-q05-full": dict(trainer="grpo", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                          gc=True, batch=8, num_generations=8, completion=256, rows=[64] * 16, steps=2),
    "grpo-q05-full-beta": dict(trainer="grpo", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                               gc=True, batch=8, num_generations=8, completion=256, rows=[64] * 16, steps=2,
                               beta=0.04),
    "sft-q05-full-fp32": dict(trainer="sft", model="qwen2.5-0.5b", weights="fp32", bf16=True, attn="sdpa",
                              gc=True, batch=8, rows=[1024] * 32),
    "dpo-q05-full": dict(trainer="dpo", model="qwen2.5-0.5b", weights="bf16", bf16=True, attn="sdpa",
                         gc=True, batch=2, rows=[(256, 512, 384)] * 8),
    "hf-q15-full-fits": dict(alone=True, trainer="hf", model="qwen2.5-1.5b", weights="fp32", bf16=True, attn="sdpa",
                             gc=False, batch=4, rows=[2048] * 16, steps=2),
    "hf-q15-full-oom": dict(alone=True, trainer="hf", model="qwen2.5-1.5b", weights="fp32", bf16=True, attn="sdpa",
                            gc=False, batch=20, rows=[2048] * 40, steps=2),
}
TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16)


def versions() -> dict[str, str | None]:
    found = {}
    for name in RECORDED:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def scaled(setting: dict, tiny: bool) -> dict:
    """On CPU every length is divided by 8 (a smoke run, not a measurement)."""
    if not tiny:
        return setting
    s = dict(setting)

    def cut(n):
        return max(8, n // 8)

    s["rows"] = [tuple(cut(x) for x in r) if isinstance(r, tuple) else cut(r) for r in setting["rows"]]
    if "completion" in s:
        s["completion"] = cut(s["completion"])
    s["steps"] = 2
    return s


def build_model(setting: dict, device: str, tiny: bool):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(MODELS / setting["model"])
    if tiny:
        for key, value in TINY.items():
            setattr(config, key, value)
        if getattr(config, "layer_types", None):
            config.layer_types = config.layer_types[: TINY["num_hidden_layers"]]
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[setting["weights"]]
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=setting["attn"])
    return model.to(device)


def token_rows(setting: dict, vocab: int) -> list[list[int]]:
    rng = random.Random(0)
    low = 1000  # clear of the special tokens at the top of the vocabularies
    return [[rng.randrange(low, low + 20000) for _ in range(n)] for n in setting["rows"]]


class Recorder:
    """Peaks per optimizer step (a TrainerCallback built lazily so this module imports without transformers)."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        self.steps: list[dict] = []

    def callback(self):
        import torch
        from transformers import TrainerCallback

        recorder = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                if recorder.cuda:
                    recorder.steps.append({"before": torch.cuda.memory_allocated(),
                                           "overall_before": torch.cuda.max_memory_allocated()})
                    recorder._overall = max(getattr(recorder, "_overall", 0), torch.cuda.max_memory_allocated())
                    torch.cuda.reset_peak_memory_stats()

            def on_step_end(self, args, state, control, **kwargs):
                if recorder.cuda:
                    recorder.steps[-1].update(step=state.global_step, max_allocated=torch.cuda.max_memory_allocated(),
                                              after=torch.cuda.memory_allocated())

        return _Callback()


def recording_collator(collator, shapes: list):
    def collate(examples):
        batch = collator(examples)
        ids = batch.get("input_ids") if hasattr(batch, "get") else None
        if ids is not None:
            shapes.append(list(ids.shape))
        return batch

    return collate


def pad_collator(pad_id: int):
    import torch

    def collate(examples):
        longest = max(len(e["input_ids"]) for e in examples)
        ids = torch.full((len(examples), longest), pad_id, dtype=torch.long)
        labels = torch.full((len(examples), longest), -100, dtype=torch.long)
        mask = torch.zeros((len(examples), longest), dtype=torch.long)
        for i, e in enumerate(examples):
            n = len(e["input_ids"])
            ids[i, :n] = torch.tensor(e["input_ids"])
            labels[i, :n] = ids[i, :n]
            mask[i, :n] = 1
        return {"input_ids": ids, "labels": labels, "attention_mask": mask}

    return collate


def common_args(setting: dict, out_dir: str, device: str) -> dict:
    return dict(
        output_dir=out_dir, max_steps=setting.get("steps", 3), per_device_train_batch_size=setting["batch"],
        gradient_accumulation_steps=1, learning_rate=1e-5, logging_steps=1000, save_strategy="no",
        report_to=[], bf16=setting["bf16"] and device == "cuda", gradient_checkpointing=setting["gc"],
        dataloader_num_workers=0, seed=42, use_cpu=device == "cpu", disable_tqdm=True,
    )


def make_trainer(setting: dict, model, tokenizer, device: str, out_dir: str, callback, shapes: list):
    rows = token_rows(setting, model.config.vocab_size) if setting["trainer"] in ("hf", "sft", "grpo") else []
    peft_config = None
    if setting.get("peft"):
        from peft import LoraConfig

        peft_config = LoraConfig(task_type="CAUSAL_LM", **setting["peft"])
    args = common_args(setting, out_dir, device)
    kind = setting["trainer"]
    if kind == "hf":
        from transformers import Trainer, TrainingArguments

        dataset = [{"input_ids": r} for r in rows]
        trainer = Trainer(model=model, args=TrainingArguments(remove_unused_columns=False, **args),
                          train_dataset=dataset, data_collator=pad_collator(tokenizer.pad_token_id or 0),
                          callbacks=[callback])
    elif kind == "sft":
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer

        config = SFTConfig(max_length=setting.get("max_length", 1024), packing=setting.get("packing", False), **args)
        trainer = SFTTrainer(model=model, args=config, train_dataset=Dataset.from_dict({"input_ids": rows}),
                             processing_class=tokenizer, peft_config=peft_config, callbacks=[callback])
    elif kind == "dpo":
        from datasets import Dataset
        from trl import DPOConfig, DPOTrainer

        def words(word, n):  # one token per word: the pre-tokenizer splits at each space
            return word + f" {word}" * (n - 1)

        data = {"prompt": [], "chosen": [], "rejected": []}
        for p, c, r in setting["rows"]:  # TRL appends the EOS to chosen and rejected: one token less here
            data["prompt"].append(words("the", p))
            data["chosen"].append(" " + words("yes", c - 1))
            data["rejected"].append(" " + words("no", r - 1))
        if peft_config is None:  # TRL loads the reference model from the policy's path
            model.save_pretrained(Path(out_dir) / "policy")
            model.config._name_or_path = str(Path(out_dir) / "policy")
        config = DPOConfig(max_length=setting.get("max_length", 1024), **args)
        trainer = DPOTrainer(model=model, args=config, train_dataset=Dataset.from_dict(data),
                             processing_class=tokenizer, peft_config=peft_config, callbacks=[callback])
    elif kind == "grpo":
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        prompts = [tokenizer.decode(r) for r in rows]

        def reward(completions, **kwargs):
            return [float(len(c)) for c in completions]

        if setting.get("beta") and peft_config is None:  # TRL loads the reference model from the policy's path
            model.save_pretrained(Path(out_dir) / "policy")
            model.config._name_or_path = str(Path(out_dir) / "policy")
        config = GRPOConfig(num_generations=setting["num_generations"], max_completion_length=setting["completion"],
                            beta=setting.get("beta", 0.0), **args)
        trainer = GRPOTrainer(model=model, args=config, reward_funcs=reward,
                              train_dataset=Dataset.from_dict({"prompt": prompts}), processing_class=tokenizer,
                              peft_config=peft_config, callbacks=[callback])
    else:
        raise ValueError(kind)
    trainer.data_collator = recording_collator(trainer.data_collator, shapes)
    return trainer


def prepared_lengths(trainer, setting: dict) -> list | None:
    """The token lengths of the rows as the trainer prepared them (what the estimator is given)."""
    dataset = trainer.train_dataset
    try:
        columns = dataset.column_names
    except AttributeError:
        return None
    if "input_ids" in columns:
        return [len(x) for x in dataset["input_ids"]]
    if "prompt" in columns and setting["trainer"] == "grpo":
        return [len(trainer.processing_class(p)["input_ids"]) for p in dataset["prompt"]]
    if "chosen_ids" in columns:
        return [[len(p), len(c), len(r)] for p, c, r in
                zip(dataset["prompt_ids"], dataset["chosen_ids"], dataset["rejected_ids"])]
    return None


def run_one(name: str, device: str) -> dict:
    import torch
    from transformers import AutoTokenizer

    tiny = device == "cpu"
    setting = scaled(SETTINGS[name], tiny)
    cuda = device == "cuda"
    record: dict = {"name": name, "setting": setting, "device": device, "versions": versions(), "oom": False}
    if cuda:
        torch.cuda.init()
        torch.empty(1, device="cuda")
        free, total = torch.cuda.mem_get_info()
        record["gpu"] = torch.cuda.get_device_name()
        record["gpu_total"] = total
        record["context_bytes"] = total - free - torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
    tokenizer = AutoTokenizer.from_pretrained(Path(os.environ.get("MEMORY_GOLDENS_TOKENIZERS", TOKENIZERS))
                                              / TOKENIZER_OF[setting["model"]])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = build_model(setting, device, tiny)
    record["parameters"] = sum(p.numel() for p in model.parameters())
    if cuda:
        record["weights_allocated"] = torch.cuda.memory_allocated()
    recorder = Recorder(cuda)
    shapes: list = []
    start = time.time()
    with tempfile.TemporaryDirectory() as out_dir:
        try:
            trainer = make_trainer(setting, model, tokenizer, device, out_dir, recorder.callback(), shapes)
            record["trainable_parameters"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
            record["prepared_lengths"] = prepared_lengths(trainer, setting)
            record["effective"] = {
                "gradient_checkpointing": trainer.args.gradient_checkpointing,
                "optim": str(trainer.args.optim), "attn": trainer.model.config._attn_implementation,
                "model_dtype": str(next(trainer.model.parameters()).dtype),
                "adapter_dtype": next((str(p.dtype) for n, p in trainer.model.named_parameters() if "lora_" in n), None),
                "reference_dtype": next((str(p.dtype) for p in trainer.ref_model.parameters()), None)
                if getattr(trainer, "ref_model", None) is not None else None,
            }
            if cuda:
                record["init_allocated"] = torch.cuda.memory_allocated()
            trainer.train()
        except (torch.OutOfMemoryError, RuntimeError) as error:
            if not isinstance(error, torch.OutOfMemoryError) and "out of memory" not in str(error):
                raise
            record["oom"] = True
            record["error"] = str(error).splitlines()[0][:300]
    record["seconds"] = round(time.time() - start, 1)
    record["batch_shapes"] = shapes
    record["steps"] = recorder.steps
    if cuda:
        overall = max([getattr(recorder, "_overall", 0), torch.cuda.max_memory_allocated()]
                      + [s.get("max_allocated", 0) for s in recorder.steps])
        record["max_memory_allocated"] = overall
        record["max_memory_reserved"] = torch.cuda.max_memory_reserved()
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--out", type=Path, default=ROOT / "fixtures" / "memory-goldens")
    parser.add_argument("--only", default="", help="comma-separated setting names")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per setting")
    parser.add_argument("--jobs", type=int, default=1, help="settings run at once (each in its own process)")
    parser.add_argument("--tokenizers", type=Path, default=TOKENIZERS, help="the folder of the fixture tokenizers")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "")
        try:
            record = run_one(args.run_one, args.device)
        except Exception as error:  # recorded, so one broken setting does not lose the others
            record = {"name": args.run_one, "failed": f"{type(error).__name__}: {error}"[:2000],
                      "traceback": traceback.format_exc()[-4000:]}
        print("GOLDEN " + json.dumps(record))
        return
    os.environ["MEMORY_GOLDENS_TOKENIZERS"] = str(args.tokenizers.resolve())
    names = [n for n in args.only.split(",") if n] or list(SETTINGS)
    args.out.mkdir(parents=True, exist_ok=True)
    shared = [n for n in names if not SETTINGS[n].get("alone")]
    alone = [n for n in names if SETTINGS[n].get("alone")]
    # max_memory_allocated is per process, so settings can share the GPU; one that should run out of memory runs alone
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda name: run_in_process(name, args), shared))
    for name in alone:
        run_in_process(name, args)


def run_in_process(name: str, args) -> None:
    started = time.time()
    try:
        done = subprocess.run([sys.executable, __file__, "--run-one", name, "--device", args.device],
                              capture_output=True, text=True, timeout=args.timeout)
        lines = [x for x in done.stdout.splitlines() if x.startswith("GOLDEN ")]
        record = json.loads(lines[-1][7:]) if lines else {"name": name, "failed": done.stderr[-3000:]}
    except subprocess.TimeoutExpired:
        record = {"name": name, "failed": f"timed out after {args.timeout} s"}
    (args.out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    peak = record.get("max_memory_allocated")
    status = "OOM" if record.get("oom") else ("FAILED " + record["failed"][-300:] if "failed" in record else "ok")
    print(f"{name}: {status} peak={peak} ({time.time() - started:.0f} s)", flush=True)

if __name__ == "__main__":
    main()
