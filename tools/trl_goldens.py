"""Write fixtures/trl-1.16.0/goldens-*.json: TRL 1.16.0's own input_ids and labels for the project's rows.

Not run in CI: tests/goldens/trl.py reads what this wrote and checks that
`mldebug inspect-data --framework trl` gives the same ids, labels and dropped rows.

Usage (offline; a tiny randomly initialised model, nothing is downloaded):

    pip install trl==1.16.0 torch==2.13.0
    HF_HUB_OFFLINE=1 python tools/trl_goldens.py [--corpus ../shared/corpus]

For every rows file, tokenizer and setting it builds a real ``SFTTrainer`` (which prepares the dataset:
ChatML conversion, EOS appending, tokenization, the ``{% generation %}`` training-template swap for
``assistant_only_loss``, labels, truncation and the dropping of fully masked rows), then passes each
prepared row through the trainer's own ``DataCollatorForLanguageModeling`` and stores the collated
``input_ids`` and ``labels``. Rows missing from the prepared dataset are recorded as dropped; a setting
where ``SFTTrainer`` raises stores the exception instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import warnings
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "trl-1.16.0"
PINS = {"trl": "1.16.0"}
RECORDED = ("trl", "transformers", "tokenizers", "datasets", "torch")
NPM_TOKENIZERS = ("qwen2.5-instruct", "qwen3", "mistral-nemo-instruct", "llama3-instruct")
# read in place from the shared corpus, never copied; the corpus Qwen3 config carries the template TRL 1.16 knows
CORPUS_TOKENIZERS = {"phi-3-mini-instruct": "phi-3-mini-instruct", "qwen3-corpus": "qwen3"}
SMALL = 64  # forces truncation of the long rows

# rows file -> setting name -> (SFTConfig keys, the inspect-data flags that ask for the same)
SETTINGS = {
    "rows-messages.json": {
        "default": ({}, []),
        "assistant_only_loss": ({"assistant_only_loss": True}, ["--train-on", "assistant"]),
        "max_length_64": ({"max_length": SMALL}, ["--max-length", str(SMALL)]),
        "assistant_only_loss_max_length_64": (
            {"assistant_only_loss": True, "max_length": SMALL}, ["--train-on", "assistant", "--max-length", str(SMALL)]),
    },
    "rows-prompt-completion-chat.json": {
        "default": ({}, []),
        "completion_only_loss_off": ({"completion_only_loss": False}, ["--train-on", "all"]),
        "assistant_only_loss": ({"assistant_only_loss": True}, ["--train-on", "assistant"]),
        "max_length_64": ({"max_length": SMALL}, ["--max-length", str(SMALL)]),
        "completion_only_loss_off_max_length_64": (
            {"completion_only_loss": False, "max_length": SMALL}, ["--train-on", "all", "--max-length", str(SMALL)]),
    },
    "rows-prompt-completion-text.json": {
        "default": ({}, []),
        "completion_only_loss_off": ({"completion_only_loss": False}, ["--train-on", "all"]),
        "max_length_64": ({"max_length": SMALL}, ["--max-length", str(SMALL)]),
    },
    "rows-sharegpt.json": {
        "default": ({}, []),
        "max_length_64": ({"max_length": SMALL}, ["--max-length", str(SMALL)]),
    },
    "rows-text.json": {
        "default": ({}, []),
        "max_length_64": ({"max_length": SMALL}, ["--max-length", str(SMALL)]),
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()
    for name, pinned in PINS.items():
        if version(name) != pinned:
            sys.exit(f"{name} {version(name)} is installed; these goldens are for {name}=={pinned}")
    os.environ["HF_HUB_OFFLINE"] = "1"
    logging.disable(logging.WARNING)
    import datasets

    datasets.disable_progress_bars()
    warnings.filterwarnings("ignore")
    tokenizers = {n: ROOT / "fixtures" / "tokenizers" / n for n in NPM_TOKENIZERS}
    for name, folder in CORPUS_TOKENIZERS.items():
        if (args.corpus / "tokenizers" / folder).is_dir():
            tokenizers[name] = args.corpus / "tokenizers" / folder
    versions = {name: version(name) for name in RECORDED}
    for tok_name, tok_path in tokenizers.items():
        corpus = CORPUS_TOKENIZERS.get(tok_name)
        out = {"versions": versions, "tokenizer": tok_name, "corpus_tokenizer": corpus and f"tokenizers/{corpus}", "settings": []}
        for rows_file, settings in SETTINGS.items():
            for setting, (config, flags) in settings.items():
                result = run_setting(tok_path, OUT / rows_file, config)
                out["settings"].append({"rows_file": rows_file, "setting": setting, "sft_config": config,
                                        "inspect_flags": flags, **result})
                print(tok_name, rows_file, setting, result.get("error") or f"{len(result['rows'])} rows, dropped {result['dropped']}")
        (OUT / f"goldens-{tok_name}.json").write_text(dumps(out), encoding="utf-8")


def dumps(golden: dict) -> str:
    """Indented JSON with each row's ids and labels on one line (readable diffs when a version changes)."""
    settings = []
    for setting in golden["settings"]:
        rows = [json.dumps(r) for r in setting.get("rows", [])]
        head = json.dumps({k: v for k, v in setting.items() if k != "rows"}, ensure_ascii=False)
        body = ',\n   '.join(rows)
        settings.append(head[:-1] + (f', "rows": [\n   {body}\n  ]}}' if "rows" in setting else "}"))
    top = json.dumps({k: v for k, v in golden.items() if k != "settings"}, ensure_ascii=False)
    return top[:-1] + ', "settings": [\n  ' + ",\n  ".join(settings) + "\n]}\n"


def run_setting(tok_path: Path, rows_path: Path, config: dict) -> dict:
    """TRL's prepared rows after its collator, which rows it dropped, or the error it raised."""
    from datasets import load_dataset
    from jinja2 import TemplateError
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(str(tok_path))
    with tempfile.TemporaryDirectory() as tmp:
        dataset = load_dataset("json", data_files=str(rows_path), split="train", cache_dir=tmp)
        dataset = dataset.add_column("mldebug_row", list(range(len(dataset))))
        sft_config = SFTConfig(output_dir=tmp, report_to="none", use_cpu=True, remove_unused_columns=False, **config)
        try:
            trainer = SFTTrainer(model=tiny_model(tokenizer), args=sft_config, train_dataset=dataset, processing_class=tokenizer)
        except (ValueError, RuntimeError, TemplateError) as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        prepared = trainer.train_dataset
        rows = []
        for example in prepared:
            batch = trainer.data_collator([{"input_ids": example["input_ids"], "labels": example["labels"]}])
            rows.append({"row": example["mldebug_row"], "input_ids": batch["input_ids"][0].tolist(),
                         "labels": batch["labels"][0].tolist()})
        kept = {r["row"] for r in rows}
        return {"training_template": _template_name(trainer), "rows": rows,
                "dropped": [i for i in range(len(dataset)) if i not in kept]}


def _template_name(trainer) -> str | None:
    """Which trl/chat_templates/*_training.jinja TRL swapped in (None: the tokenizer's own template)."""
    from trl import chat_template_utils

    if trainer.chat_template is None:
        return None
    for path in sorted((Path(chat_template_utils.__file__).parent / "chat_templates").glob("*_training.jinja")):
        if path.read_text(encoding="utf-8") == trainer.chat_template:
            return path.name
    return "unknown"


def tiny_model(tokenizer):
    """A randomly initialised two-layer Llama with the tokenizer's vocabulary (SFTTrainer needs a model)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096)
    return LlamaForCausalLM(config)


if __name__ == "__main__":
    main()
