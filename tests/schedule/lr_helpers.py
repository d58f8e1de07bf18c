"""Helpers of the lr-plot tests: the one tiny randomly initialised model config and a real Trainer run."""

from __future__ import annotations

import json
from pathlib import Path

# the one tiny model every real-Trainer test trains (a randomly initialised Llama, CPU, fractions of a second)
TINY_MODEL_CONFIG = dict(
    vocab_size=16,
    hidden_size=8,
    intermediate_size=16,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=2,
    max_position_embeddings=8,
)
REPO = Path(__file__).resolve().parents[2]
FIXTURE_CONFIGS = REPO / "fixtures" / "configs"


def tiny_dataset(rows: int):
    import torch

    class Rows(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return rows

        def __getitem__(self, i: int):
            ids = torch.tensor([i % 16, (i + 1) % 16, 3])
            return {"input_ids": ids, "labels": ids}

    return Rows()


def run_real_trainer(tmp_path: Path, config: dict, rows: int, eval_rows: int = 0) -> tuple[list[dict], int]:
    """Train the tiny model with these TrainingArguments keys; (log entries with learning_rate, max_steps)."""
    import gc

    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

    transformers.logging.set_verbosity_error()
    gc.freeze()  # the Trainer calls gc.collect() several times a run: skip the test session's long-lived objects
    torch.manual_seed(0)
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        optim="sgd",  # the schedule does not depend on the optimizer; SGD keeps the run fast
        logging_steps=1,
        **config,
    )
    trainer = Trainer(model=LlamaForCausalLM(LlamaConfig(**TINY_MODEL_CONFIG)), args=args,
                      train_dataset=tiny_dataset(rows), eval_dataset=tiny_dataset(eval_rows) if eval_rows else None)
    trainer.train()
    return [h for h in trainer.state.log_history if "learning_rate" in h], trainer.state.max_steps


def write_config(tmp_path: Path, config: dict, name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return path
