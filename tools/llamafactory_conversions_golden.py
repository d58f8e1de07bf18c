"""Write fixtures/llamafactory-0.9.5/more/conversions.json: LLaMA-Factory 0.9.5's ids and labels for ShareGPT rows in
the two shapes its converter reads its own way (fixtures/llamafactory-rows/conversions.json, our rows):

- a function_call whose ``arguments`` is a JSON string (row 0; row 1 the same call as an object): the converter keeps
  the string and ``FunctionFormatter`` writes ``json.dumps(arguments)``, so the trained text holds it double-encoded
  (Llama 3: ``"parameters": "{\\"item\\": ...}"``);
- a system turn and a ``system`` column (row 2; row 3 the column alone, row 4 the turn alone): the converter takes
  the turn and keeps the row.

tests/frameworks/test_llama_factory_conversions.py compares mldebug with these goldens.

Usage, with LLaMA-Factory 0.9.5 in its own venv (see tools/llamafactory_goldens.py):

    HF_HUB_OFFLINE=1 /path/to/venv/bin/python tools/llamafactory_conversions_golden.py
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "fixtures" / "llamafactory-rows" / "conversions.json"
OUT = ROOT / "fixtures" / "llamafactory-0.9.5" / "more" / "conversions.json"
CASES = (("llama3", "llama3-instruct"), ("qwen", "qwen2.5-instruct"), ("default", "qwen2.5-instruct"),
         ("mistral", "mistral-nemo-instruct"))


def main() -> None:
    if version("llamafactory") != "0.9.5":
        sys.exit(f"llamafactory {version('llamafactory')} is installed; these goldens are for 0.9.5")
    audio = types.ModuleType("torchaudio")  # mm_plugin imports it; text rows never use it
    audio.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", audio)
    from datetime import datetime

    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import DatasetAttr
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    out = {"versions": {p: version(p) for p in ("llamafactory", "transformers", "tokenizers", "datasets")},
           "rows": "fixtures/llamafactory-rows/conversions.json",
           "tool_date": datetime.now().strftime("%d %b %Y"),  # Llama 3's tool prompt carries the day's date
           "cases": []}
    for template, tokenizer_name in CASES:
        data_args = DataArguments(template=template)
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(ROOT / "fixtures" / "tokenizers" / tokenizer_name)))["tokenizer"]
        processor = SupervisedDatasetProcessor(template=get_template_and_fix_tokenizer(tokenizer, data_args),
                                               tokenizer=tokenizer, processor=None, data_args=data_args)
        attr = DatasetAttr("file", dataset_name=ROWS.name, formatting="sharegpt")
        attr.tools = "tools"
        attr.system = "system"
        converter = get_dataset_converter("sharegpt", attr, data_args)
        rows = []
        for example in load_dataset("json", data_files=str(ROWS), split="train"):
            encoded = processor.preprocess_dataset({k: [v] for k, v in converter(example).items()})
            rows.append({"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0]})
        out["cases"].append({"template": template, "tokenizer": tokenizer_name, "rows": rows})
        print(template, tokenizer_name, len(rows))
    OUT.write_text(json.dumps(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
