"""Which seed LoRA A's init follows in a real TRL 1.16 run, and so which run `mldebug probe` reproduces: one LoRA
SFT config (bf16, non-reentrant checkpointing, Llama: session 9's golden id 2, whose replay disagreed) run through
the real SFTTrainer five ways.

    python tools/probe_seed_goldens.py [--out fixtures/probe-goldens/seed-ways.json]

The ways: the trainer built by path as ``trl sft --config`` builds it, with the config's seed unset (42) and set to
0; the model loaded by the script (after ``torch.manual_seed(0)``) and handed to the trainer as an object, with the
config's seed unset and with ``args.seed = 0`` (session 9's harness, which did not store that seed); and the model
wrapped with peft by the script itself (``get_peft_model`` after ``torch.manual_seed(0)``, no ``peft_config`` for
the trainer). Stored per way: the loss and every trainable tensor's gradient norm, with the library versions.
What it showed: object or path does not matter, the trainer calls ``set_seed(args.seed)`` before it wraps the model
either way; only a model the script wraps itself follows the script's own random state (probe cannot know it).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "probe-goldens" / "seed-ways.json"

CASE: dict[str, Any] = {  # session 9's golden id 2 (commit 4ae94cc), its config without a seed as that file stored it
    "arch": "llama", "task": "sft", "adapter": "lora", "checkpointing": "non-reentrant",
    "config": {"learning_rate": 1e-05, "per_device_train_batch_size": 4, "max_length": 128, "bf16": True,
               "gradient_checkpointing": True, "gradient_checkpointing_kwargs": {"use_reentrant": False},
               "use_peft": True, "lora_r": 4, "lora_alpha": 16, "lora_dropout": 0.0,
               "lora_target_modules": ["o_proj", "down_proj"], "use_dora": False},
    "rows": [
        {"messages": [{"role": "system", "content": "\nbb-{_z}g]''[']f>{?z}!x"}, {"role": "user", "content": "é?gx?"},
                      {"role": "assistant", "content": "x]_xfgy ?"}]},
        {"messages": [{"role": "system", "content": "}y中y"}, {"role": "user", "content": "c/"},
                      {"role": "assistant", "content": "😀}\nfa/ gé"}]},
        {"messages": [{"role": "system", "content": "c \nc,"}, {"role": "user", "content": "[\"yg中\""},
                      {"role": "assistant", "content": "中😀"}]},
        {"messages": [{"role": "system", "content": ".zyd"}, {"role": "user", "content": "]{z!."},
                      {"role": "assistant", "content": "😀}x<,y}"}]},
    ],
}
WAYS = ("path", "path-seed-0", "object", "object-seed-0", "wrapped-by-script")


def _goldens():
    spec = importlib.util.spec_from_file_location("probe_goldens", ROOT / "tools" / "probe_goldens.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def case_of(way: str) -> dict:
    """The config a way's run reads (the seed key where the way sets it)."""
    case = copy.deepcopy(CASE)
    if way == "path-seed-0":
        case["config"]["seed"] = 0
    return case


def run_way(way: str, work: Path, model_dir: Path) -> dict:
    import torch
    from datasets import Dataset
    from peft import get_peft_model
    from torch.utils.data import SequentialSampler
    from transformers import AutoModelForCausalLM
    from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser, get_peft_config

    goldens = _goldens()
    case = case_of(way)
    config_path = goldens.write_case(work / way, case, model_dir)
    if way.startswith("path"):
        truth = goldens.run_trainer(case, config_path)
        return {"loss": truth.loss, "grads": truth.grads}
    goldens._fingerprints_off()
    _, args, model_args = TrlParser((ScriptArguments, SFTConfig, ModelConfig)).parse_yaml_file(str(config_path))
    args.disable_tqdm, args.dataloader_num_workers = True, 0
    if way == "object-seed-0":
        args.seed = 0
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_args.model_name_or_path, dtype=torch.float32)
    peft_config = get_peft_config(model_args)
    if way == "wrapped-by-script":
        model, peft_config = get_peft_model(model, peft_config), None
    trainer = SFTTrainer(model=model, args=args, train_dataset=Dataset.from_list(case["rows"]),
                         processing_class=goldens._tokenizer(model_args.model_name_or_path), peft_config=peft_config)
    trainer._get_train_sampler = lambda *a, **k: SequentialSampler(trainer.train_dataset)
    batch = next(iter(trainer.get_train_dataloader()))
    prepared = trainer.accelerator.prepare_model(trainer.model)
    prepared.train()
    loss = trainer.compute_loss(prepared, batch)
    loss.backward()
    grads = {n: (None if p.grad is None else float(p.grad.double().norm()))
             for n, p in trainer.model.named_parameters() if p.requires_grad}
    return {"loss": float(loss.detach()), "grads": grads}


def main(argv: list[str] | None = None) -> int:
    import importlib.metadata as md

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--work", type=Path, default=Path("/tmp/probe-seed-goldens"))
    args = parser.parse_args(argv)
    model_dir = _goldens().models(args.work / "models")[CASE["arch"]]
    ways = {}
    for way in WAYS:
        ways[way] = run_way(way, args.work, model_dir)
        print(f"{way:18s} loss {ways[way]['loss']:.8g}", flush=True)
    versions = {p: md.version(p) for p in ("torch", "transformers", "trl", "peft", "datasets", "accelerate")}
    args.out.write_text(json.dumps({"versions": versions, "made_by": "tools/probe_seed_goldens.py", "case": CASE,
                                    "ways": ways}, ensure_ascii=False, indent=1) + "\n")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
