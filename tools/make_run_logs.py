"""Write fixtures/runs/: real training logs with planted faults, from the REAL HF Trainer and TRL on CPU.

Each scenario trains a tiny randomly initialised Llama (2 layers, hidden 32, built from a config; the
qwen2.5-instruct tokenizer from fixtures/tokenizers) for a few dozen steps and keeps what the trainer
wrote: ``trainer_state.json`` (``trainer.save_state()``) and, for one run, the console output of
transformers' PrinterCallback. The rows are our own (ROWS below). Each scenario's settings and library
versions go to fixtures/runs/VERSIONS.json (the top-level ``versions`` are those of the first ten scenarios). Not run in CI; about two minutes on two CPU cores:

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

Issue 24's classes, each planted with its healthy twin (tests/checks/test_run_readings.py):
    sft-eval-is-train    TRL SFT, 8 rows x 20 epochs, eval on the training rows  RN010
    sft-eval-held-out    the same, eval on 8 other rows                          (no RN010)
    sft-final-eval-is-train  HF Trainer, 24 rows x 12 epochs, default logging_steps (no train loss logged),
                         one eval at the end on the training rows            RN010
    sft-final-eval-held-out  the same, eval on other rows                    (no RN010)
    sft-epochs-memorise  16 rows x 10 epochs, eval every 2 steps on other rows   RN013
    sft-epochs-learning  the same for 5 epochs                                   (no RN013)
    dpo-warmup-stopped   TRL DPO, warmup 200 of 400 steps, stopped at step 16    RN031 (info: in warmup)
    dpo-learning         TRL DPO, warmup 2, 8 pairs                              (no RN031)
    dpo-empty-completions TRL DPO whose collator cuts every completion          RN031 (error: empty labels)
    grpo-length-limit    TRL GRPO, max_completion_length 8, a reward for length  RN024 (console)
    grpo-length-ends     the same with an EOS bias: completions end              (no RN024)
    grpo-completions-greedy  TRL GRPO, log_completions, temperature 0.01 (every completion of a prompt the same),
                         a format reward that always returns 1.0 beside a length reward  RN047 (no RN046: no
                         function varies, the completions do not)
    grpo-completions-sampled the same at temperature 1.0, both rewards graded            (no RN046, RN047)
    grpo-format-reward-constant  temperature 1.0, the format reward always 1.0            RN046 (no RN047)
    sft-lr-100x, sft-lr-base  LR 0.3 and 3e-3 on 24 steps (the tiny model takes 0.3 without a spike:
                         sft-lr-too-high, LR 3.0, is the spike's planted run)     RN003 on sft-lr-too-high only
    sft-poisoned-row     TRL SFT, one row of noise among 48 (two repeated pairs), at the step the batch plan gives it
                         (its config.yaml and train.jsonl beside the log)     RN003 + the row, check-run --config
Crashes (console captures of a child process; tests/checks/test_run_crash.py):
    crash-no-pad-token, crash-grpo-generation-batch, crash-dummy-optim, crash-weight-2d,
    crash-checkpoint-error, crash-bf16-weight-sync, crash-dataloader-bus-error (CRASH_SCRIPTS), host-oom-killed
    and host-oom-rlimit (torch.distributed.run with a worker over a memory limit we set), crash-bus-error
    (torch.distributed.run with a worker that gets SIGBUS: exitcode -7)            RN040

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


def sft_final_eval(name: str, work: Path, *, train_rows, eval_rows, lr: float, epochs: int) -> dict:
    """The HF Trainer with its default logging_steps (500): a short run logs no train loss before the one eval at
    its end, only the run's mean ``train_loss``."""
    from transformers import Trainer, TrainingArguments

    tok = tokenizer()
    model = tiny_model(len(tok))
    args = TrainingArguments(
        output_dir=str(work / name), num_train_epochs=epochs, per_device_train_batch_size=4,
        per_device_eval_batch_size=8, learning_rate=lr, warmup_steps=2, eval_strategy="no", save_strategy="no",
        report_to="none", use_cpu=True, seed=SEED, disable_tqdm=True, dataloader_num_workers=0,
    )
    trainer = Trainer(model=model, args=args, train_dataset=lm_dataset(tok, train_rows),
                      eval_dataset=lm_dataset(tok, eval_rows), data_collator=collator(tok))
    trainer.train()
    trainer.evaluate()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "transformers.Trainer", "epochs": epochs, "learning_rate": lr, "logging_steps": 500,
            "train_rows": len(train_rows), "eval_rows": "the training rows" if eval_rows == train_rows
            else f"{len(eval_rows)} held-out rows", "vocab_size": len(tok)}


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


# --- issue 24: the classes a careful reader sees, each planted with a healthy twin ----------------------------------

class StopAt:
    """A callback that stops training at ``step``: a run killed or stopped early (its schedule is the full one)."""

    def __new__(cls, step: int):
        from transformers import TrainerCallback

        class _Stop(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if state.global_step >= step:
                    control.should_training_stop = True
                return control

        return _Stop()


def sft_trl(name: str, work: Path, *, train_rows, eval_rows, lr: float, epochs: int, eval_steps: int,
            logging_steps: int) -> dict:
    """TRL SFTTrainer on plain text rows (it logs mean_token_accuracy, eval too)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    tok = tokenizer()
    model = tiny_model(len(tok))
    steps = epochs * len(train_rows) // 4
    args = SFTConfig(output_dir=str(work / name), max_steps=steps, per_device_train_batch_size=4,
                     per_device_eval_batch_size=8, learning_rate=lr, warmup_steps=2, logging_steps=logging_steps,
                     eval_strategy="steps", eval_steps=eval_steps, save_strategy="no", report_to="none", use_cpu=True,
                     seed=SEED, disable_tqdm=True, max_length=48, dataset_num_proc=None)
    trainer = SFTTrainer(model=model, args=args, processing_class=tok,
                         train_dataset=Dataset.from_dict({"text": texts(train_rows)}),
                         eval_dataset=Dataset.from_dict({"text": texts(eval_rows)}))
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "trl.SFTTrainer", "max_steps": steps, "epochs": epochs, "learning_rate": lr,
            "train_rows": len(train_rows), "eval_rows": "the training rows" if eval_rows == train_rows
            else f"{len(eval_rows)} held-out rows", "vocab_size": len(tok)}


POISON_STEP = 40  # the optimizer step the poisoned row is placed in (by the batch plan, which the run then checks)


def sft_poisoned_row(name: str, work: Path) -> dict:
    """TRL SFT on 48 rows of two question/answer pairs and one row of noise, placed where the batch plan says the Trainer's
    seeded sampler reaches it at step 40: the real run must spike there, and ``check-run --config`` must name the
    row. The config, rows and trainer_state.json are kept side by side (the config is the one trained with)."""
    import random

    import yaml
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings

    folder = OUT / name
    config = yaml.safe_load((folder / "config.yaml").read_text())
    rows = 48
    plan = BatchPlan(SamplerSettings(samples=rows, micro_batch_size=config["per_device_train_batch_size"],
                                     seed=config["seed"], epochs=config["num_train_epochs"]))
    poisoned = plan.step(POISON_STEP).rows[0]
    noise = random.Random(SEED)
    lines = [{"text": text} for text in (texts(FACTS[:2]) * rows)[:rows]]
    lines[poisoned] = {"text": " ".join("".join(noise.choice("qxzjvkwy0123456789#%&") for _ in range(7))
                                        for _ in range(40))}
    write(f"{name}/train.jsonl", "".join(json.dumps(line) + "\n" for line in lines))
    tok = tokenizer()
    keys = {k: v for k, v in config.items() if k not in ("model_name_or_path", "dataset_name", "dataset_train_split")}
    args = SFTConfig(**keys, output_dir=str(work / name), report_to="none", use_cpu=True, disable_tqdm=True,
                     save_strategy="no", dataset_num_proc=None)
    trainer = SFTTrainer(model=tiny_model(len(tok)), args=args, processing_class=tok,
                         train_dataset=Dataset.from_list(lines))
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "trl.SFTTrainer", "rows": rows, "poisoned_row": poisoned, "poisoned_step": POISON_STEP,
            "config": f"{name}/config.yaml", "vocab_size": len(tok)}


def dpo(name: str, work: Path, *, lr: float, warmup_steps: int, max_steps: int, stop_at: int | None = None,
        collator_max_length: int | None = None, pairs: int = len(FACTS)) -> dict:
    """TRL DPO from a reference equal to the start; ``stop_at`` stops it early, ``collator_max_length`` gives the
    trainer a preference collator that cuts every sequence there (shorter than the prompts: no completion token)."""
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    tok = tokenizer()
    model = tiny_model(len(tok))
    rows = [{"prompt": f"Answer the question in one short sentence. Question: {q}", "chosen": a,
             "rejected": FACTS[(i + 5) % len(FACTS)][1]} for i, (q, a) in enumerate(FACTS)][:pairs]
    args = DPOConfig(output_dir=str(work / name), max_steps=max_steps, per_device_train_batch_size=4,
                     learning_rate=lr, warmup_steps=warmup_steps, logging_steps=1, report_to="none", use_cpu=True,
                     seed=SEED, save_strategy="no", disable_tqdm=True, max_length=64)
    extra = {}
    if collator_max_length:
        extra["data_collator"] = DataCollatorForPreference(pad_token_id=tok.pad_token_id, max_length=collator_max_length)
    trainer = DPOTrainer(model=model, ref_model=tiny_model(len(tok)), args=args, train_dataset=Dataset.from_list(rows),
                         processing_class=tok, callbacks=[StopAt(stop_at)] if stop_at else None, **extra)
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    out = {"trainer": "trl.DPOTrainer", "max_steps": max_steps, "learning_rate": lr, "warmup_steps": warmup_steps,
           "pairs": len(rows)}
    if stop_at:
        out["stopped_at"] = stop_at
    if collator_max_length:
        out["collator_max_length"] = collator_max_length
    return out


def grpo_lengths(name: str, work: Path, *, max_completion_length: int, eos_bias: float | None) -> dict:
    """TRL GRPO whose reward wants long answers; the console (PrinterCallback dicts) is kept. A random tiny model
    almost never samples EOS (1 in 151k), so every completion runs to the limit; ``eos_bias`` adds a bias to EOS
    through generate's ``sequence_bias`` so that completions end (the healthy twin)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = tokenizer()
    model = tiny_model(len(tok))

    def wants_long_answers(completions, **kwargs):
        return [min(len(c), 200) / 200 for c in completions]

    generation = {"sequence_bias": [[[tok.eos_token_id], eos_bias]]} if eos_bias else None
    prompts = Dataset.from_dict({"prompt": [q for q, _a in FACTS]})
    args = GRPOConfig(output_dir=str(work / name), max_steps=12, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=max_completion_length, logging_steps=1, learning_rate=1e-4,
                      report_to="none", use_cpu=True, seed=SEED, save_strategy="no", disable_tqdm=True,
                      generation_kwargs=generation)
    trainer = GRPOTrainer(model=model, reward_funcs=wants_long_answers, args=args, train_dataset=prompts,
                          processing_class=tok)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        trainer.train()
    trainer.save_state()
    write(f"{name}/console.log", printed.getvalue())
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    return {"trainer": "trl.GRPOTrainer", "max_steps": 12, "max_completion_length": max_completion_length,
            "eos_sequence_bias": eos_bias}


CRASH_SCRIPTS = {
    # each: (what is planted, the script; {tok} is the tokenizer folder, {root} the repository)
    "crash-no-pad-token": ("a tokenizer without a pad token and transformers' padding collator", """
import torch
from transformers import AutoTokenizer, DataCollatorWithPadding, LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments
from datasets import Dataset
tok = AutoTokenizer.from_pretrained({tok!r})
tok.pad_token = None
rows = Dataset.from_dict(tok(["Question: What is 2+2?\\nAnswer: 4."] * 4 + ["Question: Which ocean is the largest?\\nAnswer: The Pacific."] * 4))
model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2))
args = TrainingArguments(output_dir="out", max_steps=4, per_device_train_batch_size=4, report_to="none", use_cpu=True,
                         save_strategy="no", logging_steps=1)
Trainer(model=model, args=args, train_dataset=rows, data_collator=DataCollatorWithPadding(tok)).train()
"""),
    "crash-grpo-generation-batch": ("GRPO with 3 prompts per device and num_generations=4", """
from trl import GRPOConfig
GRPOConfig(output_dir="out", per_device_train_batch_size=3, num_generations=4, use_cpu=True, report_to="none")
"""),
    "crash-dummy-optim": ("accelerate's DummyOptim (a DeepSpeed config names the optimizer) stepped without DeepSpeed",
                          """
import torch
from accelerate.utils.deepspeed import DummyOptim
model = torch.nn.Linear(4, 4)
optimizer = DummyOptim(model.parameters(), lr=1e-4)
for step in range(2):
    loss = model(torch.randn(2, 4)).pow(2).mean()
    loss.backward()
    print({{'loss': round(loss.item(), 4), 'learning_rate': 1e-4, 'epoch': step / 2}})
    optimizer.step()
"""),
    "crash-weight-2d": ("an embedding called with FSDP1's flattened 1-D weight (generate outside the FSDP forward)", """
import torch
embedding = torch.nn.Embedding(16, 4)
flat = embedding.weight.detach().reshape(-1)  # what FSDP1 leaves in the module outside its forward (use_orig_params=False)
torch.nn.functional.embedding(torch.tensor([[1, 2, 3]]), flat)
"""),
    "crash-checkpoint-error": ("non-reentrant activation checkpointing whose recomputation sees other tensors", """
import torch
from torch.utils.checkpoint import checkpoint
calls = []
def block(x):  # gathers a different shard on recomputation, as ZeRO-3 parameters look outside their gather
    calls.append(1)
    width = 4 if len(calls) == 1 else 2
    return (x[:, :width] * 2).sum(dim=1, keepdim=True) * x[:, :width]
x = torch.randn(3, 4, requires_grad=True)
checkpoint(block, x, use_reentrant=False).sum().backward()
"""),
    "crash-dataloader-bus-error": ("a DataLoader worker killed by SIGBUS (what a full /dev/shm does to it)", """
import os, signal
import torch
from torch.utils.data import DataLoader, Dataset
class Rows(Dataset):
    def __len__(self):
        return 8
    def __getitem__(self, i):
        if i == 5:  # a worker writing its batch into a full /dev/shm gets SIGBUS; sent here, as the kernel would
            os.kill(os.getpid(), signal.SIGBUS)
        return torch.ones(4) * i
for step, batch in enumerate(DataLoader(Rows(), batch_size=2, num_workers=1)):
    print({{'loss': round(2.0 - step / 10, 2), 'learning_rate': 1e-4, 'epoch': step / 4}}, flush=True)
"""),
    "crash-bf16-weight-sync": ("bfloat16 weights turned into numpy for a weight sync", """
import torch
weights = {{"lm_head.weight": torch.randn(4, 4, dtype=torch.bfloat16)}}
payload = {{name: tensor.cpu().numpy() for name, tensor in weights.items()}}
"""),
}


def crash(name: str, work: Path) -> dict:
    """Run a crash script in a child Python and keep what it printed (stdout and stderr, as a console capture)."""
    import subprocess

    planted, script = CRASH_SCRIPTS[name]
    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.py").write_text(script.format(tok=str(TOKENIZER), root=str(ROOT)), encoding="utf-8")
    done = subprocess.run([sys.executable, "run.py"], cwd=folder, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore"}, timeout=600)
    write(f"{name}/console.log", _portable(done.stdout + done.stderr, folder))
    return {"planted": planted, "exit_status": done.returncode, "runner": "python run.py"}


OOM_WORKER = """
import os, resource, sys, time
import torch
limit = int(os.environ["MEMORY_LIMIT_MB"]) << 20
if os.environ.get("LIMIT_WITH") == "rlimit":
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
print({'loss': 2.41, 'grad_norm': 1.3, 'learning_rate': 1e-05, 'epoch': 0.01}, flush=True)
print({'loss': 2.37, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.02}, flush=True)
held = []
while True:  # a data loader that keeps every batch: host memory grows until the limit
    held.append(torch.ones(16 << 20, dtype=torch.uint8))
    time.sleep(0.01)
"""


def host_oom(name: str, work: Path) -> dict:
    """A torchrun job whose worker exceeds a memory limit we set. ``host-oom-killed``: the limit is enforced as the
    kernel's OOM killer enforces a cgroup's: SIGKILL when the worker's resident memory passes it (a watchdog
    reading /proc); torch.distributed.elastic then reports ``exitcode: -9``. ``host-oom-rlimit``: the limit is
    RLIMIT_AS (``resource.setrlimit``), so the allocation itself fails inside the worker."""
    import signal
    import subprocess
    import threading
    import time

    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(OOM_WORKER, encoding="utf-8")
    limit_mb = 1024 if name.endswith("rlimit") else 400
    env = {**os.environ, "MEMORY_LIMIT_MB": str(limit_mb), "LIMIT_WITH": "rlimit" if name.endswith("rlimit") else "rss",
           "OMP_NUM_THREADS": "1"}
    job = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=1", "--nnodes=1",
                            "train.py"], cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=env)
    killed = []

    def watchdog():
        while job.poll() is None:
            for pid in _children(job.pid):
                if _rss_mb(pid) > limit_mb:
                    os.kill(pid, signal.SIGKILL)  # what the OOM killer does at a cgroup's memory.max
                    killed.append(pid)
                    return
            time.sleep(0.05)

    if not name.endswith("rlimit"):
        threading.Thread(target=watchdog, daemon=True).start()
    output, _ = job.communicate(timeout=600)
    write(f"{name}/console.log", _portable(output, folder))
    return {"planted": f"the worker exceeds {limit_mb} MB", "limit": "RLIMIT_AS" if name.endswith("rlimit")
            else "SIGKILL at resident memory above the limit", "launcher": "torch.distributed.run",
            "exit_status": job.returncode}


BUS_WORKER = """
import os, signal
print({'loss': 2.41, 'grad_norm': 1.3, 'learning_rate': 1e-05, 'epoch': 0.01}, flush=True)
print({'loss': 2.37, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.02}, flush=True)
os.kill(os.getpid(), signal.SIGBUS)  # what a write into a full /dev/shm does to the process (sent as the kernel would)
"""


def bus_error(name: str, work: Path) -> dict:
    """A torchrun job whose worker dies of SIGBUS: torch.distributed.elastic reports ``exitcode: -7``."""
    import subprocess

    folder = work / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "train.py").write_text(BUS_WORKER, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=1", "--nnodes=1",
                           "train.py"], cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    write(f"{name}/console.log", _portable(done.stdout + done.stderr, folder))
    return {"planted": "the worker gets SIGBUS", "launcher": "torch.distributed.run", "exit_status": done.returncode}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
                found += _children(int(entry.name))
    return found


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _portable(text: str, folder: Path) -> str:
    """The capture with this machine's temporary folder and home replaced by placeholders."""
    return text.replace(str(folder), "/work/run").replace(str(Path.home()), "~")


def grpo_completions(name: str, work: Path, *, temperature: float, constant_format: bool) -> dict:
    """TRL GRPO with ``log_completions``: TRL writes each logged step's prompts, completions, per-function rewards
    and advantages to ``output_dir/completions/completions_<step>.parquet``; those files are kept beside the log.
    ``constant_format``: the format reward returns 1.0 whatever the completion (a check that always passes)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    tok = tokenizer()
    model = tiny_model(len(tok))

    def length_reward(completions, **kwargs):
        return [min(len(c), 40) / 40 for c in completions]

    def format_reward(completions, **kwargs):
        return [1.0 if constant_format else float(len(c) % 2) for c in completions]

    prompts = Dataset.from_dict({"prompt": [q for q, _a in FACTS[:16]]})
    args = GRPOConfig(output_dir=str(work / name), max_steps=8, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, logging_steps=1, learning_rate=1e-4, report_to="none", use_cpu=True,
                      seed=SEED, save_strategy="no", disable_tqdm=True, temperature=temperature,
                      log_completions=True)
    trainer = GRPOTrainer(model=model, reward_funcs=[format_reward, length_reward], args=args, train_dataset=prompts,
                          processing_class=tok)
    with contextlib.redirect_stdout(io.StringIO()):
        trainer.train()
    trainer.save_state()
    keep(work / name / "trainer_state.json", f"{name}/trainer_state.json")
    for table in sorted((work / name / "completions").glob("completions_*.parquet")):
        keep(table, f"{name}/completions/{table.name}")
    return {"trainer": "trl.GRPOTrainer", "max_steps": 8, "num_generations": 4, "max_completion_length": 8,
            "temperature": temperature, "log_completions": True, "constant_format_reward": constant_format}


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
    "sft-eval-is-train": lambda work: sft_trl("sft-eval-is-train", work, train_rows=FACTS[:8], eval_rows=FACTS[:8],
                                              lr=3e-2, epochs=20, eval_steps=40, logging_steps=2),
    "sft-eval-held-out": lambda work: sft_trl("sft-eval-held-out", work, train_rows=FACTS[:8], eval_rows=FACTS[8:16],
                                              lr=3e-2, epochs=20, eval_steps=40, logging_steps=2),
    "sft-final-eval-is-train": lambda work: sft_final_eval("sft-final-eval-is-train", work, train_rows=FACTS[:24],
                                                          eval_rows=FACTS[:24], lr=1e-2, epochs=12),
    "sft-final-eval-held-out": lambda work: sft_final_eval("sft-final-eval-held-out", work, train_rows=FACTS[:24],
                                                          eval_rows=FACTS[24:], lr=1e-2, epochs=12),
    "sft-epochs-learning": lambda work: sft("sft-epochs-learning", work, lr=1e-2, steps=20, train_rows=FACTS[:16],
                                            eval_rows=FACTS[16:24], eval_steps=2, logging_steps=1),
    "sft-epochs-memorise": lambda work: sft("sft-epochs-memorise", work, lr=1e-2, steps=40, train_rows=FACTS[:16],
                                            eval_rows=FACTS[16:24], eval_steps=2, logging_steps=1),
    "sft-lr-100x": lambda work: sft("sft-lr-100x", work, lr=0.3, steps=24, train_rows=FACTS, logging_steps=1),
    "sft-lr-base": lambda work: sft("sft-lr-base", work, lr=3e-3, steps=24, train_rows=FACTS, logging_steps=1),
    "dpo-warmup-stopped": lambda work: dpo("dpo-warmup-stopped", work, lr=1e-3, warmup_steps=200, max_steps=400,
                                           stop_at=16),
    "dpo-learning": lambda work: dpo("dpo-learning", work, lr=5e-3, warmup_steps=2, max_steps=16, pairs=8),
    "dpo-empty-completions": lambda work: dpo("dpo-empty-completions", work, lr=1e-3, warmup_steps=2, max_steps=16,
                                              collator_max_length=8),
    "grpo-length-limit": lambda work: grpo_lengths("grpo-length-limit", work, max_completion_length=8, eos_bias=None),
    "grpo-length-ends": lambda work: grpo_lengths("grpo-length-ends", work, max_completion_length=16, eos_bias=11.0),
    "sft-poisoned-row": lambda work: sft_poisoned_row("sft-poisoned-row", work),
    "grpo-completions-greedy": lambda work: grpo_completions("grpo-completions-greedy", work, temperature=0.01,
                                                             constant_format=True),
    "grpo-format-reward-constant": lambda work: grpo_completions("grpo-format-reward-constant", work,
                                                                 temperature=1.0, constant_format=True),
    "grpo-completions-sampled": lambda work: grpo_completions("grpo-completions-sampled", work, temperature=1.0,
                                                              constant_format=False),
    "host-oom-killed": lambda work: host_oom("host-oom-killed", work),
    "host-oom-rlimit": lambda work: host_oom("host-oom-rlimit", work),
    "crash-no-pad-token": lambda work: crash("crash-no-pad-token", work),
    "crash-grpo-generation-batch": lambda work: crash("crash-grpo-generation-batch", work),
    "crash-dummy-optim": lambda work: crash("crash-dummy-optim", work),
    "crash-weight-2d": lambda work: crash("crash-weight-2d", work),
    "crash-checkpoint-error": lambda work: crash("crash-checkpoint-error", work),
    "crash-bf16-weight-sync": lambda work: crash("crash-bf16-weight-sync", work),
    "crash-dataloader-bus-error": lambda work: crash("crash-dataloader-bus-error", work),
    "crash-bus-error": lambda work: bus_error("crash-bus-error", work),
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
    index_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            sys.stderr.write(f"== {name}\n")
            made = {**SCENARIOS[name](Path(tmp)), "versions": versions()}
            index = json.loads(index_path.read_text()) if index_path.is_file() else {"scenarios": {}}
            index["scenarios"][name] = made  # read again: another scenario may have been written meanwhile
            index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
