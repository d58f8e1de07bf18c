"""Write fixtures/trl-1.16.0-preference/goldens.json: what TRL's own trainers make of our preference rows.

Not run in CI (trl is not a dependency): tests/goldens/trl.py reads what this wrote and checks
that `mldebug inspect-data --task dpo|kto|grpo` gives the same ids and labels, and drops the same rows.

Usage (offline; no model is downloaded, a tiny random model is built from a config):

    pip install trl==1.16.0 torch==2.13.0
    python tools/trl_preference_goldens.py

For each tokenizer and rows file it builds the real trainer and reads what the trainer itself prepared:
- DPO (``DPOTrainer``: ``_prepare_dataset`` in ``__init__``, then ``DataCollatorForPreference`` on one row at a time):
  per kept row the chosen and rejected sequences as the model sees them, labels -100 where ``completion_mask`` is 0;
- KTO (``KTOTrainer`` + ``DataCollatorForUnpairedPreference``): input_ids, labels and label per kept row;
- GRPO (``GRPOTrainer._tokenize_prompts``, what generation is sampled from): prompt ids per row;
- ORPO (``trl.experimental.orpo.ORPOTrainer``, the legacy path: string-level chat template, BOS/EOS ids added,
  completions cut to ``max_length`` minus the prompt): each row's ``chosen_input_ids``/``chosen_labels`` and
  ``rejected_*`` from ``train_dataset`` (its collator only pads);
- KTO on paired rows (``task`` ``kto_paired``): KTOTrainer unpairs chosen/rejected rows itself; each unpaired row
  by its source row and label;
- GRPO step counts (``steps`` cases): the real GRPOTrainer's train dataloader length and what the Trainer makes of
  it (``set_initial_training_values``) for batch settings on N prompts.
A row index column (``_row``) rides along so rows the trainer filters out are known; a rows file the trainer refuses
as a whole records the error. Settings: TRL's defaults and a small ``max_length`` (with ``keep_end`` for DPO too).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "trl-1.16.0-preference"
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "mistral-nemo-instruct", "llama3-instruct")
IGNORE_INDEX = -100
PINNED_TRL = "1.16.0"
SMALL = 48  # max_length of the truncating settings: long prompts are dropped, long replies cut
# task -> rows files; task -> setting name -> config keys
FILES = {
    "dpo": ("rows_dpo_conversational.json", "rows_dpo_implicit.json", "rows_dpo_implicit_unshared.json", "rows_dpo_implicit_noreply.json",
            "rows_dpo_text.json", "rows_dpo_text_implicit.json", "rows_pairs_text_edges.json",
            "rows_orpo_conversational_edges.json", "rows_orpo_system_last.json"),
    "kto": ("rows_kto.json", "rows_kto_text.json"),
    "grpo": ("rows_grpo.json", "rows_grpo_text.json"),
    "orpo": ("rows_dpo_conversational.json", "rows_dpo_implicit.json", "rows_dpo_text.json",
             "rows_dpo_text_implicit.json", "rows_pairs_text_edges.json", "rows_orpo_conversational_edges.json",
             "rows_orpo_system_last.json"),
    "kto_paired": ("rows_dpo_conversational.json", "rows_dpo_implicit.json", "rows_dpo_text.json",
                   "rows_pairs_text_edges.json"),
}
SETTINGS = {
    "dpo": {"default": {}, "truncating": {"max_length": SMALL},
            "keep_end": {"max_length": SMALL, "truncation_mode": "keep_end"}},
    "kto": {"default": {}, "truncating": {"max_length": SMALL}},
    "grpo": {"default": {}},
    "orpo": {"default": {}, "truncating": {"max_length": SMALL}},
    "kto_paired": {"default": {}, "truncating": {"max_length": SMALL}},
}
# GRPO batch settings (prompts in the dataset, GRPOConfig keys) whose step counts the real trainer gives
STEP_CASES = (
    (37, {"per_device_train_batch_size": 8, "num_generations": 8}),
    (37, {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 4, "num_generations": 8}),
    (37, {"per_device_train_batch_size": 6, "gradient_accumulation_steps": 2, "num_generations": 4,
          "num_iterations": 2, "num_train_epochs": 2}),
    (50, {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 3, "num_generations": 4,
          "generation_batch_size": 24}),
    (50, {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "num_generations": 2,
          "steps_per_generation": 4}),
    (5, {"per_device_train_batch_size": 8, "num_generations": 2}),
    (64, {"per_device_train_batch_size": 8, "num_generations": 8, "max_steps": 3}),
)


def tiny_model(vocab_size: int, folder: str) -> str:
    """A random one-layer Llama saved to folder (the trainers load a reference model from the model's path)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=4096)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def labelled(batch, i: int) -> dict:
    """Sequence i of a collated batch without its padding (attention_mask 0), labels -100 outside the completion."""
    n = int(batch["attention_mask"][i].sum())
    ids = [int(t) for t in batch["input_ids"][i][:n]]
    mask = batch["completion_mask"][i][:n].tolist()
    return {"input_ids": ids, "labels": [t if m else IGNORE_INDEX for t, m in zip(ids, mask)]}


def prepared(trainer_class, config_class, tok, model, rows, config: dict, workdir: str):
    """A real trainer built on the rows: its train_dataset is what TRL prepared, its data_collator what it feeds."""
    from datasets import Dataset

    args = config_class(output_dir=workdir, report_to=[], per_device_train_batch_size=2, use_cpu=True, bf16=False,
                        **config)
    return trainer_class(model=model, args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)


def dpo(tok, model, rows, config: dict, workdir: str) -> dict:
    from trl import DPOConfig, DPOTrainer

    trainer = prepared(DPOTrainer, DPOConfig, tok, model, rows, config, workdir)
    out = []
    for example in trainer.train_dataset:
        batch = trainer.data_collator([example])  # chosen first, then rejected
        out.append({"row": example["_row"], "chosen": labelled(batch, 0), "rejected": labelled(batch, 1)})
    return {"rows": out}


def kto(tok, model, rows, config: dict, workdir: str) -> dict:
    from trl import KTOConfig, KTOTrainer

    trainer = prepared(KTOTrainer, KTOConfig, tok, model, rows, config, workdir)
    out = []
    for example in trainer.train_dataset:
        batch = trainer.data_collator([example])
        out.append({"row": example["_row"], **labelled(batch, 0), "label": bool(batch["label"][0])})
    return {"rows": out}


def grpo(tok, model, rows, config: dict, workdir: str) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    def reward_len(completions, **kwargs):
        return [float(len(c)) for c in completions]

    args = GRPOConfig(output_dir=workdir, report_to=[], per_device_train_batch_size=2, use_cpu=True, bf16=False,
                      num_generations=2, max_completion_length=8, **config)
    trainer = GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=Dataset.from_list(rows),
                          processing_class=tok)
    prompt_ids, _, _ = trainer._tokenize_prompts([r["prompt"] for r in rows])
    return {"rows": [{"row": r["_row"], "prompt_input_ids": [int(i) for i in ids]} for r, ids in zip(rows, prompt_ids)]}


def orpo(tok, model, rows, config: dict, workdir: str) -> dict:
    from trl.experimental.orpo import ORPOConfig, ORPOTrainer

    trainer = prepared(ORPOTrainer, ORPOConfig, tok, model, rows, config, workdir)
    out = []
    for example in trainer.train_dataset:
        out.append({"row": example["_row"], **{side: {"input_ids": example[f"{side}_input_ids"],
                                                      "labels": example[f"{side}_labels"]}
                                               for side in ("chosen", "rejected")}})
    return {"rows": out}


def kto_paired(tok, model, rows, config: dict, workdir: str) -> dict:
    """KTOTrainer on chosen/rejected rows: it unpairs them (chosen label true, rejected false) before tokenizing."""
    return kto(tok, model, rows, config, workdir)


def grpo_steps(tok, model, workdir: str) -> list[dict]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    def reward_len(completions, **kwargs):
        return [float(len(c)) for c in completions]

    cases = []
    for prompts, config in STEP_CASES:
        args = GRPOConfig(output_dir=workdir, report_to=[], use_cpu=True, bf16=False, max_completion_length=8, **config)
        rows = [{"prompt": f"Question {i}: what is {i} + {i}?"} for i in range(prompts)]
        trainer = GRPOTrainer(model=model, reward_funcs=reward_len, args=args, train_dataset=Dataset.from_list(rows),
                              processing_class=tok)
        loader = trainer.get_train_dataloader()
        _, per_epoch, _, _, _, in_epoch, max_steps = trainer.set_initial_training_values(trainer.args, loader)
        cases.append({"prompts": prompts, "config": config, "micro_batches_per_epoch": in_epoch,
                      "optimizer_steps_per_epoch": per_epoch, "total_optimizer_steps": max_steps})
    return cases


RUNNERS = {"dpo": dpo, "kto": kto, "grpo": grpo, "orpo": orpo, "kto_paired": kto_paired}


def main() -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":  # TRL's is_conversational probes set.pop(): errors depend on the seed
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    import tokenizers
    import transformers
    import trl
    from transformers import AutoTokenizer

    if trl.__version__ != PINNED_TRL:
        sys.exit(f"the goldens are TRL {PINNED_TRL}'s: pip install trl=={PINNED_TRL} torch==2.13.0 (found {trl.__version__})")
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    transformers.logging.set_verbosity_error()
    goldens = {
        "versions": {"trl": trl.__version__, "transformers": transformers.__version__,
                     "tokenizers": tokenizers.__version__, "python": sys.version.split()[0]},
        "max_length_small": SMALL,
        "cases": [],
    }
    for name in TOKENIZERS:
        for task, files in FILES.items():
            for setting, config in SETTINGS[task].items():
                for file in files:
                    rows = json.loads((OUT / file).read_text())
                    rows = [{**r, "_row": i} for i, r in enumerate(rows)]
                    tok = AutoTokenizer.from_pretrained(ROOT / "fixtures" / "tokenizers" / name)
                    case = {"tokenizer": name, "task": task, "setting": setting, "config": config, "file": file}
                    with tempfile.TemporaryDirectory() as workdir:
                        model = tiny_model(len(tok), f"{workdir}/model")
                        try:
                            case.update(RUNNERS[task](tok, model, rows, config, workdir))
                        except Exception as exc:  # the trainer refuses the whole dataset: that is the golden
                            case["error"] = f"{type(exc).__name__}: {exc}"
                    kept = {r["row"] for r in case.get("rows", [])}
                    case["dropped"] = [] if "error" in case else [i for i in range(len(rows)) if i not in kept]
                    goldens["cases"].append(case)
                    print(name, task, setting, file, "error" if "error" in case else f"{len(kept)} rows",
                          file=sys.stderr)
    tok = AutoTokenizer.from_pretrained(ROOT / "fixtures" / "tokenizers" / TOKENIZERS[0])
    with tempfile.TemporaryDirectory() as workdir:
        goldens["grpo_steps"] = grpo_steps(tok, tiny_model(len(tok), f"{workdir}/model"), workdir)
    (OUT / "goldens.json").write_text(json.dumps(goldens, ensure_ascii=False, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
