"""Golden: how transformers 4.x (and 5.0-5.14, where the field is deprecated) schedules warmup_ratio, from a real
Trainer run.

Run with a Python whose installed transformers is 4.x (a throwaway venv), e.g.

    python -m venv /tmp/venv-tf4 && /tmp/venv-tf4/bin/pip install transformers==4.57.6 torch==2.13.0 accelerate
    /tmp/venv-tf4/bin/python tools/transformers4_warmup_golden.py

or 5.0-5.14 (LLaMA-Factory 0.9.5's venv has 5.6.0), which writes fixtures/configs/transformers-5.6-warmup-golden.json:

    /work/venvs/lf095/bin/python tools/transformers4_warmup_golden.py

For each case it trains a tiny randomly initialised Llama (CPU, SGD) with the Trainer, logging every
step, and records the Trainer's max_steps, ``TrainingArguments.get_warmup_steps(max_steps)`` and the
learning rate the scheduler built by ``transformers.get_scheduler`` gives at every optimizer step
(read from ``lr_scheduler.get_last_lr()`` before each step). Output:
fixtures/configs/transformers-4-warmup-golden.json, with the versions it ran on.
"""

from __future__ import annotations

import gc
import json
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "configs" / "transformers-4-warmup-golden.json"
sys.path.insert(0, str(ROOT / "tests" / "schedule"))

from lr_helpers import TINY_MODEL_CONFIG, tiny_dataset  # noqa: E402  (the model and rows the lr-plot tests train)

# (name, TrainingArguments keys, training rows)
CASES = [
    ("linear_ratio_0.1", {"learning_rate": 1e-3, "per_device_train_batch_size": 2, "num_train_epochs": 2,
                          "warmup_ratio": 0.1}, 95),
    ("cosine_ratio_0.1_accumulation", {"learning_rate": 2e-4, "per_device_train_batch_size": 2,
                                       "gradient_accumulation_steps": 3, "num_train_epochs": 3,
                                       "lr_scheduler_type": "cosine", "warmup_ratio": 0.1}, 100),
    ("steps_override_ratio", {"learning_rate": 1e-3, "per_device_train_batch_size": 4, "num_train_epochs": 1,
                              "warmup_ratio": 0.5, "warmup_steps": 3}, 64),
    ("constant_with_warmup_ratio_0.25", {"learning_rate": 5e-4, "per_device_train_batch_size": 8,
                                         "num_train_epochs": 2, "lr_scheduler_type": "constant_with_warmup",
                                         "warmup_ratio": 0.25}, 50),
    ("ratio_0.1_125_steps", {"learning_rate": 2e-5, "per_device_train_batch_size": 1, "num_train_epochs": 1,
                             "warmup_ratio": 0.1}, 125),
]


def main() -> None:
    import torch
    import transformers

    major, minor = (int(n) for n in transformers.__version__.split(".")[:2])
    if not (major == 4 or (major == 5 and minor < 15)):
        raise SystemExit(f"transformers {transformers.__version__} is installed: run this with transformers 4.x or "
                         "5.0-5.14 (5.15 removed warmup_ratio)")
    out = OUT if major == 4 else OUT.with_name(f"transformers-{major}.{minor}-warmup-golden.json")
    cases = [_run(name, keys, rows) for name, keys, rows in CASES]
    document = {
        "generated_by": "tools/transformers4_warmup_golden.py",
        "versions": {"transformers": transformers.__version__, "torch": torch.__version__,
                     "python": platform.python_version()},
        "cases": cases,
    }
    out.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"{out}: {len(cases)} cases")


def _run(name: str, keys: dict, rows: int) -> dict:
    import tempfile

    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainerCallback, TrainingArguments

    class RecordLR(TrainerCallback):
        def __init__(self) -> None:
            self.lrs: list[float] = []

        def on_step_begin(self, args, state, control, **kwargs):
            self.lrs.append(kwargs["lr_scheduler"].get_last_lr()[0])

    transformers.logging.set_verbosity_error()
    gc.freeze()
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, save_strategy="no", report_to=[], use_cpu=True, disable_tqdm=True,
                                 optim="sgd", logging_steps=1, **keys)
        record = RecordLR()
        trainer = Trainer(model=LlamaForCausalLM(LlamaConfig(**TINY_MODEL_CONFIG)), args=args, train_dataset=tiny_dataset(rows),
                          callbacks=[record])
        trainer.train()
    max_steps = trainer.state.max_steps
    return {"name": name, "config": keys, "rows": rows, "max_steps": max_steps,
            "warmup_steps": args.get_warmup_steps(max_steps), "lrs": record.lrs}


if __name__ == "__main__":
    main()
