"""Write fixtures/runs/: real training logs with planted faults, from the REAL HF Trainer and TRL on CPU.

Each scenario trains a tiny randomly initialised Llama (2 layers, hidden 32, built from a config; the
qwen2.5-instruct tokenizer from fixtures/tokenizers) for a few dozen steps and keeps what the trainer
wrote: ``trainer_state.json`` (``trainer.save_state()``) and, for one run, the console output of
transformers' PrinterCallback. The rows are our own (ROWS below). Library versions go to
fixtures/runs/VERSIONS.json. Not run in CI; about two minutes on two CPU cores:

    pip install trl==1.16.0 torch==2.13.0      # into the venv, beside mldebug's own dependencies
    HF_HUB_OFFLINE=1 python tools/make_run_logs.py [--only NAME ...]

Scenarios (the check each must trip; tests/checks/test_run_checks.py holds them to it):
    sft-healthy          a normal short SFT run with evaluation          (no error or warning)
    sft-all-labels-masked every label is -100                             RN001, RN002
    sft-lr-too-high      AdamW at LR 3.0                                  RN007 (vocab size), RN003/RN004
    sft-overfit-16-rows  16 training rows, 16 epochs, eval on other rows  RN006
    sft-console          the healthy run's console (v5 dicts of strings)  reader test
    grpo-constant-reward TRL GRPO with a reward function returning 0      RN020, RN021
    dpo-lr-zero          TRL DPO with learning rate 0                     RN031
    sft-mlflow           a short SFT run, HF's MLflowCallback into a file store (mlruns/) and an
                         SQLite store (mlflow.db) side by side               reader tests
    torchtune-sft        torchtune's DiskLogger fed as full_finetune_single_device feeds it, from a
                         real training loop on the tiny model, LR far too high  reader test, RN003/RN004
    torchtune-dpo        torchtune's DiskLogger fed as lora_dpo_single_device feeds it (torchtune's
                         DPOLoss and get_batch_log_probs), learning rate 0   reader test, RN031

The MLflow scenario needs ``pip install mlflow-skinny==3.17.2 sqlalchemy alembic torch==2.13.0``; the
torchtune ones ``pip install torchtune==0.6.1 torchao==0.14.1 torch==2.13.0``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "runs"
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
SEED = 7

# Our own rows: short factual sentences, a question and answer each.
FACTS = [
    ("What is the capital of France?", "The capital of France is Paris."),
    ("How many legs does a spider have?", "A spider has eight legs."),
    ("What gas do plants take in?", "Plants take in carbon dioxide from the air."),
    ("What is the boiling point of water at sea level?", "Water boils at 100 degrees Celsius at sea level."),
    ("Who wrote Hamlet?", "Hamlet was written by William Shakespeare."),
    ("What is the largest planet in the solar system?", "Jupiter is the largest planet in the solar system."),
    ("How many days are in a leap year?", "A leap year has 366 days."),
    ("What language is spoken in Brazil?", "Portuguese is the main language spoken in Brazil."),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au."),
    ("How many continents are there?", "There are seven continents."),
    ("What is the freezing point of water?", "Water freezes at 0 degrees Celsius."),
    ("Which organ pumps blood?", "The heart pumps blood through the body."),
    ("What is the square root of 81?", "The square root of 81 is 9."),
    ("Which ocean is the largest?", "The Pacific Ocean is the largest ocean."),
    ("What do bees make?", "Bees make honey from the nectar of flowers."),
    ("How many hours are in a day?", "A day has 24 hours."),
    ("What is the capital of Japan?", "The capital of Japan is Tokyo."),
    ("What color is the sky on a clear day?", "On a clear day the sky is blue."),
    ("How many sides does a hexagon have?", "A hexagon has six sides."),
    ("What is the main ingredient of bread?", "Bread is mainly made from flour."),
    ("Which planet is called the red planet?", "Mars is called the red planet."),
    ("What is 12 times 12?", "12 times 12 is 144."),
    ("What do caterpillars turn into?", "Caterpillars turn into butterflies or moths."),
    ("Where is the Great Barrier Reef?", "The Great Barrier Reef is off the coast of Australia."),
    ("What is the tallest mountain on Earth?", "Mount Everest is the tallest mountain above sea level."),
    ("How many strings does a violin have?", "A violin has four strings."),
    ("What is the capital of Canada?", "The capital of Canada is Ottawa."),
    ("Which animal is known as the king of the jungle?", "The lion is known as the king of the jungle."),
    ("What is H2O?", "H2O is the chemical formula for water."),
    ("How many minutes are in an hour?", "An hour has 60 minutes."),
    ("What instrument has 88 keys?", "A standard piano has 88 keys."),
    ("What is the smallest prime number?", "The smallest prime number is 2."),
]


def texts(rows) -> list[str]:
    return [f"Question: {q}\nAnswer: {a}" for q, a in rows]


def tiny_model(vocab_size: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         tie_word_embeddings=True)
    return LlamaForCausalLM(config)


def tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(TOKENIZER))
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def lm_dataset(tok, rows, mask_all: bool = False):
    from datasets import Dataset

    encoded = tok(texts(rows), truncation=True, max_length=48)
    labels = [[-100] * len(ids) if mask_all else list(ids) for ids in encoded["input_ids"]]
    return Dataset.from_dict({"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"],
                              "labels": labels})


def collator(tok):
    def collate(features):
        import torch

        width = max(len(f["input_ids"]) for f in features)
        batch = {"input_ids": [], "attention_mask": [], "labels": []}
        for f in features:
            pad = width - len(f["input_ids"])
            batch["input_ids"].append(list(f["input_ids"]) + [tok.pad_token_id] * pad)
            batch["attention_mask"].append(list(f["attention_mask"]) + [0] * pad)
            batch["labels"].append(list(f["labels"]) + [-100] * pad)
        return {k: torch.tensor(v) for k, v in batch.items()}

    return collate


def sft(name: str, work: Path, *, lr: float, steps: int, train_rows, eval_rows=None, mask_all=False,
        eval_steps: int = 0, logging_steps: int = 2, console: bool = False, warmup_steps: int = 0) -> dict:
    from transformers import Trainer, TrainingArguments

    tok = tokenizer()
    model = tiny_model(len(tok))
    args = TrainingArguments(
        output_dir=str(work / name), max_steps=steps, per_device_train_batch_size=4, per_device_eval_batch_size=8,
        learning_rate=lr, warmup_steps=warmup_steps, logging_steps=logging_steps,
        eval_strategy="steps" if eval_rows else "no", eval_steps=eval_steps or None, save_strategy="no",
        report_to="none", use_cpu=True, seed=SEED, disable_tqdm=console, dataloader_num_workers=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=lm_dataset(tok, train_rows, mask_all),
                      eval_dataset=lm_dataset(tok, eval_rows) if eval_rows else None, data_collator=collator(tok))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed) if console else contextlib.nullcontext():
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    if console:
        write(f"{name}/console.log", printed.getvalue())
    return {"trainer": "transformers.Trainer", "max_steps": steps, "learning_rate": lr, "vocab_size": len(tok)}


def grpo_constant_reward(name: str, work: Path) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = tokenizer()
    model = tiny_model(len(tok))

    def always_zero(completions, **kwargs):
        return [0.0 for _ in completions]

    prompts = Dataset.from_dict({"prompt": [q for q, _a in FACTS]})
    args = GRPOConfig(output_dir=str(work / name), max_steps=24, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, logging_steps=1, learning_rate=1e-4, report_to="none", use_cpu=True,
                      seed=SEED, save_strategy="no", disable_tqdm=True)
    trainer = GRPOTrainer(model=model, reward_funcs=always_zero, args=args, train_dataset=prompts,
                          processing_class=tok)
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "trl.GRPOTrainer", "max_steps": 24, "num_generations": 4, "max_completion_length": 8}


def dpo_lr_zero(name: str, work: Path) -> dict:
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    tok = tokenizer()
    model = tiny_model(len(tok))
    rows = [{"prompt": q, "chosen": a, "rejected": FACTS[(i + 5) % len(FACTS)][1]} for i, (q, a) in enumerate(FACTS)]
    args = DPOConfig(output_dir=str(work / name), max_steps=16, per_device_train_batch_size=4, learning_rate=0.0,
                     logging_steps=1, report_to="none", use_cpu=True, seed=SEED, save_strategy="no",
                     disable_tqdm=True, max_length=64)
    reference = tiny_model(len(tok))  # same seed: the reference is the starting policy, as DPO expects
    trainer = DPOTrainer(model=model, ref_model=reference, args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tok)
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "trl.DPOTrainer", "max_steps": 16, "learning_rate": 0.0}


def sft_mlflow(name: str, work: Path) -> dict:
    """The same short SFT run twice, logged by HF's MLflowCallback to a file store and to an SQLite store."""
    from transformers import Trainer, TrainingArguments

    stores = {"mlruns": f"file:{work / name / 'mlruns'}", "mlflow.db": f"sqlite:///{work / name / 'mlflow.db'}"}
    os.environ["MLFLOW_EXPERIMENT_NAME"] = "mldebug-fixtures"
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3 keeps the file store only on request
    for uri in stores.values():
        os.environ["MLFLOW_TRACKING_URI"] = uri
        tok = tokenizer()
        args = TrainingArguments(
            output_dir=str(work / name / "out"), max_steps=12, per_device_train_batch_size=4,
            per_device_eval_batch_size=8, learning_rate=3e-3, warmup_steps=2, logging_steps=2, eval_strategy="steps",
            eval_steps=6, save_strategy="no", report_to=["mlflow"], use_cpu=True, seed=SEED, disable_tqdm=True,
        )
        trainer = Trainer(model=tiny_model(len(tok)), args=args, train_dataset=lm_dataset(tok, FACTS[:24]),
                          eval_dataset=lm_dataset(tok, FACTS[24:]), data_collator=collator(tok))
        with contextlib.redirect_stdout(io.StringIO()):
            trainer.train()
        trainer.save_state()
    target = OUT / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(work / name / "mlruns", target / "mlruns", ignore=shutil.ignore_patterns(".trash"))
    shutil.copyfile(work / name / "mlflow.db", target / "mlflow.db")
    keep(work / name / "out" / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "transformers.Trainer + MLflowCallback", "max_steps": 12, "stores": sorted(stores)}


def torchtune_sft(name: str, work: Path) -> dict:
    """A plain training loop logging what torchtune's full_finetune_single_device logs, through its DiskLogger."""
    import time

    import torch
    from torchtune.training.metric_logging import DiskLogger

    tok = tokenizer()
    model = tiny_model(len(tok))
    data = lm_dataset(tok, FACTS)
    batches = [collator(tok)([data[i] for i in range(start, start + 4)]) for start in range(0, len(data), 4)]
    optimizer = torch.optim.AdamW(model.parameters(), lr=3.0)
    logger = DiskLogger(log_dir=str(work / name / "logs"))
    for step in range(1, 33):
        start = time.perf_counter()
        batch = batches[(step - 1) % len(batches)]
        tokens = (batch["labels"] != -100).sum()
        loss = model(**batch).loss
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        logger.log_dict({"loss": loss.item(), "lr": optimizer.param_groups[0]["lr"],
                         "tokens_per_second_per_gpu": tokens / (time.perf_counter() - start),
                         "grad_norm": grad_norm}, step=step)
    logger.close()
    keep(logger.path_to_log_file(), f"{name}/{logger.path_to_log_file().name}")
    return {"logger": "torchtune.training.metric_logging.DiskLogger", "steps": 32, "learning_rate": 3.0,
            "vocab_size": len(tok)}


def torchtune_dpo(name: str, work: Path) -> dict:
    """What lora_dpo_single_device logs (rewards/*, log_probs/*, logits/*) with torchtune's own DPO loss."""
    import time

    import torch
    from torchtune import rlhf
    from torchtune.rlhf.loss import DPOLoss
    from torchtune.training.metric_logging import DiskLogger

    tok = tokenizer()
    policy, reference = tiny_model(len(tok)), tiny_model(len(tok))  # same seed: the reference is the start
    rows = [(q, a, FACTS[(i + 5) % len(FACTS)][1]) for i, (q, a) in enumerate(FACTS)]
    optimizer = torch.optim.AdamW(policy.parameters(), lr=0.0)
    loss_fn = DPOLoss(beta=0.1)
    logger = DiskLogger(log_dir=str(work / name / "logs"))
    collate = collator(tok)
    for step in range(1, 17):
        start = time.perf_counter()
        chosen = lm_dataset(tok, [(q, a) for q, a, _r in rows[(step - 1) % 8 * 4:][:4]])
        rejected = lm_dataset(tok, [(q, r) for q, _a, r in rows[(step - 1) % 8 * 4:][:4]])
        batch = collate([chosen[i] for i in range(len(chosen))] + [rejected[i] for i in range(len(rejected))])
        logits = policy(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        log_probs = rlhf.get_batch_log_probs(logits, batch["labels"])  # it shifts labels against logits itself
        with torch.no_grad():
            ref_logits = reference(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            ref_log_probs = rlhf.get_batch_log_probs(ref_logits, batch["labels"])
        half = len(chosen)
        loss, chosen_rewards, rejected_rewards = loss_fn(log_probs[:half], log_probs[half:], ref_log_probs[:half],
                                                         ref_log_probs[half:])
        loss = loss.mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        logger.log_dict({
            "loss": loss.item(), "lr": optimizer.param_groups[0]["lr"],
            "tokens_per_second_per_gpu": batch["input_ids"].numel() / (time.perf_counter() - start),
            "rewards/chosen": chosen_rewards.mean().cpu(), "rewards/rejected": rejected_rewards.mean().cpu(),
            "rewards/accuracies": (chosen_rewards > rejected_rewards).float().mean().cpu(),
            "rewards/margins": (chosen_rewards - rejected_rewards).mean().cpu(),
            "log_probs/rejected": log_probs[half:].detach().mean().cpu(),
            "log_probs/chosen": log_probs[:half].detach().mean().cpu(),
            "logits/rejected": logits[half:].detach().mean().cpu(), "logits/chosen": logits[:half].detach().mean().cpu(),
        }, step=step)
    logger.close()
    keep(logger.path_to_log_file(), f"{name}/{logger.path_to_log_file().name}")
    return {"logger": "torchtune.training.metric_logging.DiskLogger", "loss": "torchtune.rlhf.loss.DPOLoss",
            "steps": 16, "learning_rate": 0.0, "beta": 0.1}


SCENARIOS = {
    "sft-healthy": lambda work: sft("sft-healthy", work, lr=3e-3, steps=60, train_rows=FACTS[:24],
                                    eval_rows=FACTS[24:], eval_steps=10, warmup_steps=6),
    "sft-console": lambda work: sft("sft-console", work, lr=3e-3, steps=20, train_rows=FACTS[:24], console=True,
                                    warmup_steps=2),
    "sft-all-labels-masked": lambda work: sft("sft-all-labels-masked", work, lr=3e-3, steps=20,
                                              train_rows=FACTS, mask_all=True),
    "sft-lr-too-high": lambda work: sft("sft-lr-too-high", work, lr=3.0, steps=40, train_rows=FACTS),
    "sft-overfit-16-rows": lambda work: sft("sft-overfit-16-rows", work, lr=1e-2, steps=64, train_rows=FACTS[:16],
                                            eval_rows=FACTS[16:], eval_steps=8, logging_steps=4),
    "grpo-constant-reward": lambda work: grpo_constant_reward("grpo-constant-reward", work),
    "dpo-lr-zero": lambda work: dpo_lr_zero("dpo-lr-zero", work),
    "sft-mlflow": lambda work: sft_mlflow("sft-mlflow", work),
    "torchtune-sft": lambda work: torchtune_sft("torchtune-sft", work),
    "torchtune-dpo": lambda work: torchtune_dpo("torchtune-dpo", work),
}


def keep(source: Path, relative: str) -> None:
    target = OUT / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)


def write(relative: str, text: str) -> None:
    target = OUT / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("torch", "transformers", "trl", "datasets", "accelerate", "tokenizers", "mlflow-skinny", "sqlalchemy",
                 "torchtune", "torchao"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), help="Run only these scenarios.")
    names = parser.parse_args().only or list(SCENARIOS)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    index_path = OUT / "VERSIONS.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {"scenarios": {}}
    index["versions"] = versions()
    index_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            sys.stderr.write(f"== {name}\n")
            index["scenarios"][name] = SCENARIOS[name](Path(tmp))
            index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
