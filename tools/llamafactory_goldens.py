"""Write fixtures/llamafactory-0.9.5/: real LLaMA-Factory 0.9.5 input_ids and labels for the project's own rows.

Not run in CI (llamafactory caps transformers below mldebug's floor, so it cannot share mldebug's venv):
tests/goldens/llama_factory.py reads what this wrote and checks that mldebug's emulation
(``--framework llama-factory --template NAME``) gives the same ids and labels, row for row.

Usage, in a throwaway venv (CPU, offline):

    python -m venv /tmp/lf && /tmp/lf/bin/pip install llamafactory==0.9.5 torch==2.13.0
    /tmp/lf/bin/pip uninstall -y torchvision torchaudio   # builds for another torch; text rows never use them
    HF_HUB_OFFLINE=1 /tmp/lf/bin/python tools/llamafactory_goldens.py [--corpus ../shared/corpus]

It runs LLaMA-Factory's own data code on fixtures/llamafactory-rows/ (read through its dataset_info.json):
``load_tokenizer``, ``get_template_and_fix_tokenizer``, the alpaca/ShareGPT converters (``get_dataset_list``
+ ``get_dataset_converter``) and ``SupervisedDatasetProcessor.preprocess_dataset``, one row at a time (a row
the processor leaves out is recorded as dropped). Rows are read with ``datasets`` as LLaMA-Factory reads them.
For some templates it also runs ``PairwiseDatasetProcessor`` (stage dpo/orpo) on the ranking rows ``pairwise.json``.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import sys
import types
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "fixtures" / "llamafactory-rows"
OUT = ROOT / "fixtures" / "llamafactory-0.9.5"
NPM = ROOT / "fixtures" / "tokenizers"
DATASETS = ("lf_alpaca", "lf_sharegpt")
# (template or None for "parse the tokenizer's", tokenizer folder, where it lives: npm fixtures or the corpus)
CASES = (
    ("qwen", "qwen2.5-instruct", "npm"),
    ("qwen3", "qwen3", "npm"),
    ("qwen3_nothink", "qwen3", "npm"),
    ("llama3", "llama3-instruct", "npm"),
    ("mistral", "mistral-nemo-instruct", "npm"),
    ("default", "qwen2.5-instruct", "npm"),
    ("empty", "llama3-instruct", "npm"),
    ("chatml", "qwen2.5-instruct", "npm"),
    (None, "qwen2.5-instruct", "npm"),
    (None, "llama3-instruct", "npm"),
    ("phi", "phi-3-mini-instruct", "corpus"),
    # the other emulated templates, on a tokenizer that has their special tokens or gets them added (not gemma3
    # and mistral_small: their multimodal plugins need the model's processor, which a tokenizer folder lacks)
    ("alpaca", "llama3-instruct", "npm"),
    ("vicuna", "llama3-instruct", "npm"),
    ("cohere", "qwen2.5-instruct", "npm"),
    ("deepseek3", "llama3-instruct", "npm"),
    ("deepseekr1", "qwen3", "npm"),
    ("gemma", "llama3-instruct", "npm"),
    ("gemma2", "llama3-instruct", "npm"),
    ("glm4", "qwen2.5-instruct", "npm"),
    ("llama2", "mistral-nemo-instruct", "npm"),
    ("ministral", "mistral-nemo-instruct", "npm"),
    ("phi4", "qwen2.5-instruct", "npm"),
)
# setting name -> DataArguments overrides
SETTINGS = {
    "defaults": {},
    "train_on_prompt": {"train_on_prompt": True},
    "mask_history": {"mask_history": True},
    "cutoff_48": {"cutoff_len": 48},
    "cutoff_48_mask_history": {"cutoff_len": 48, "mask_history": True},
    "cutoff_24_train_on_prompt": {"cutoff_len": 24, "train_on_prompt": True},
}
EXTRA = {"qwen3": {"no_thinking": {"enable_thinking": False}}}
# the pairwise processor (stage dpo/orpo) on fixtures/llamafactory-rows/pairwise.json, for these templates
PAIRWISE = ("qwen", "qwen3", "llama3", "mistral", "phi", "default", "glm4")
PAIRWISE_SETTINGS = ("defaults", "cutoff_48")


def _without_audio() -> None:
    """mm_plugin imports torchaudio at module level; no torchaudio build matches torch 2.13, and text rows never
    reach it, so an empty module stands in."""
    module = types.ModuleType("torchaudio")
    module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = module


def run_case(template: str | None, tokenizer_dir: Path, settings: dict) -> dict:
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    try:
        data_args = DataArguments(template=template, dataset_dir=str(ROWS), **settings)
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(tokenizer_dir)))["tokenizer"]
        chosen = get_template_and_fix_tokenizer(tokenizer, data_args)
    except ValueError as exc:  # LLaMA-Factory refuses the settings (e.g. train_on_prompt with efficient_eos)
        return {"refused": str(exc)}
    processor = SupervisedDatasetProcessor(template=chosen, tokenizer=tokenizer, processor=None, data_args=data_args)
    out = {}
    for name, attr in zip(DATASETS, get_dataset_list(list(DATASETS), str(ROWS))):
        rows = load_dataset("json", data_files=str(ROWS / attr.dataset_name), split="train")
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        results = []
        for example in rows:
            converted = {key: [value] for key, value in converter(example).items()}
            try:
                encoded = processor.preprocess_dataset(converted)
            except (ValueError, RuntimeError) as exc:  # the template raises on the row: LLaMA-Factory's run stops
                results.append({"error": str(exc)})
                continue
            if not encoded["input_ids"]:
                results.append({"dropped": True})
            else:
                results.append({"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0]})
        out[name] = results
    return out


def run_pairwise(template: str, tokenizer_dir: Path, settings: dict) -> list[dict]:
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.pairwise import PairwiseDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    data_args = DataArguments(template=template, dataset_dir=str(ROWS), **settings)
    tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(tokenizer_dir)))["tokenizer"]
    chosen = get_template_and_fix_tokenizer(tokenizer, data_args)
    processor = PairwiseDatasetProcessor(template=chosen, tokenizer=tokenizer, processor=None, data_args=data_args)
    [attr] = get_dataset_list(["lf_pairwise"], str(ROWS))
    converter = get_dataset_converter(attr.formatting, attr, data_args)
    results = []
    for example in load_dataset("json", data_files=str(ROWS / attr.dataset_name), split="train"):
        encoded = processor.preprocess_dataset({key: [value] for key, value in converter(example).items()})
        if not encoded["chosen_input_ids"]:
            results.append({"dropped": True})
        else:
            results.append({key: encoded[key][0] for key in
                            ("chosen_input_ids", "chosen_labels", "rejected_input_ids", "rejected_labels")})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"), help="the shared corpus (Phi-3)")
    parser.add_argument("--only", nargs="*", help="write only these templates' goldens (parsed: the no-template cases)")
    args = parser.parse_args()
    _without_audio()
    import datasets
    import llamafactory
    import tokenizers
    import transformers

    OUT.mkdir(parents=True, exist_ok=True)
    for template, folder, origin in CASES:
        if args.only and (template or "parsed") not in args.only:
            continue
        tokenizer_dir = NPM / folder if origin == "npm" else Path(args.corpus) / "tokenizers" / folder
        if not tokenizer_dir.is_dir():
            print(f"skipped {template} on {folder}: {tokenizer_dir} not found", file=sys.stderr)
            continue
        date = datetime.now().strftime("%d %b %Y")  # Llama 3's tool prompt carries today's date
        settings = {**SETTINGS, **EXTRA.get(template or "", {})}
        golden = {
            "versions": {"llamafactory": llamafactory.__version__, "transformers": transformers.__version__,
                         "tokenizers": tokenizers.__version__, "datasets": datasets.__version__},
            "template": template, "tokenizer": folder, "tokenizer_origin": origin, "tool_date": date,
            "rows": {name: str((ROWS / f"{name[3:]}.json").relative_to(ROOT)) for name in DATASETS},
            "settings": {name: {"overrides": overrides, "datasets": run_case(template, tokenizer_dir, overrides)}
                         for name, overrides in settings.items()},
        }
        if template in PAIRWISE:
            golden["pairwise"] = {name: {"overrides": settings[name], "rows": run_pairwise(template, tokenizer_dir,
                                                                                      settings[name])}
                                  for name in (*PAIRWISE_SETTINGS, *EXTRA.get(template, {}))}
        if datetime.now().strftime("%d %b %Y") != date:
            raise SystemExit("the date changed during the run (Llama 3's tool prompt): run again")
        name = f"{template or 'parsed'}.{folder}.json"
        (OUT / name).write_text(json.dumps(golden, separators=(",", ":")) + "\n", encoding="utf-8")
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
