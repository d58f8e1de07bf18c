"""Write fixtures/llamafactory-0.9.5/more/feedback.json: LLaMA-Factory 0.9.5's own KTO path (stage kto: its sharegpt
converter with a ``kto_tag`` column, then ``FeedbackDatasetProcessor``) on our KTO rows
(fixtures/llamafactory-rows/feedback.json: ``messages`` ending with the reply, a true/false ``label``, as in
LLaMA-Factory's kto_en_demo), for its templates qwen, qwen3, llama3, mistral and phi, with the defaults and
``cutoff_len: 48`` (prompts cut by infer_seqlen). It also records what LLaMA-Factory 0.9.5's supervised
processor (``llamafactory-cli train``'s path, template qwen3) does with our rows of typed content parts
(fixtures/llamafactory-rows/typed_parts.jsonl, its v1 data format): the error it raises on each row.

tests/frameworks/test_llama_factory_feedback.py checks mldebug's emulation (``Rows.encode_pair(row, "kto")``)
against it without LLaMA-Factory. Run it with LLaMA-Factory 0.9.5 in its own venv:

    HF_HUB_OFFLINE=1 /work/venvs/lf095/bin/python tools/llamafactory_feedback_golden.py [--corpus ../shared/corpus]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "fixtures" / "llamafactory-rows" / "feedback.json"
OUT = ROOT / "fixtures" / "llamafactory-0.9.5" / "more" / "feedback.json"
TEMPLATES = {"qwen": "qwen2.5-instruct", "qwen3": "qwen3", "llama3": "llama3-instruct",
             "mistral": "mistral-nemo-instruct", "phi": "phi-3-mini-instruct"}
SETTINGS = {"defaults": {}, "cutoff_48": {"cutoff_len": 48}}
INFO = {"file_name": "feedback.json", "formatting": "sharegpt", "columns": {"messages": "messages", "kto_tag": "label"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                 "system_tag": "system"}}


def run(template: str, tokenizer_dir: Path, settings: dict) -> list[dict]:
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.feedback import FeedbackDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "feedback.json").write_text(ROWS.read_text(encoding="utf-8"), encoding="utf-8")
        (Path(tmp) / "dataset_info.json").write_text(json.dumps({"lf_feedback": INFO}), encoding="utf-8")
        data_args = DataArguments(template=template, dataset_dir=tmp, **settings)
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(tokenizer_dir)))["tokenizer"]
        chosen = get_template_and_fix_tokenizer(tokenizer, data_args)
        processor = FeedbackDatasetProcessor(template=chosen, tokenizer=tokenizer, processor=None, data_args=data_args)
        [attr] = get_dataset_list(["lf_feedback"], tmp)
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        results = []
        for example in load_dataset("json", data_files=f"{tmp}/feedback.json", split="train"):
            encoded = processor.preprocess_dataset({key: [value] for key, value in converter(example).items()})
            if not encoded["input_ids"]:
                results.append({"dropped": True})
            else:
                results.append({"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0],
                                "kto_tag": encoded["kto_tags"][0]})
    return results


TYPED_PARTS = ROOT / "fixtures" / "llamafactory-rows" / "typed_parts.jsonl"
TYPED_INFO = {"file_name": "typed_parts.jsonl", "formatting": "sharegpt", "columns": {"messages": "messages", "tools": "tools"},
              "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                       "observation_tag": "tool", "function_tag": "function_call", "system_tag": "system"}}


def typed_parts_errors(tokenizer_dir: Path) -> list[str | None]:
    """The supervised processor (template qwen3) on each typed-parts row: the exception it raises, or None."""
    from datasets import load_dataset
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "typed_parts.jsonl").write_text(TYPED_PARTS.read_text(encoding="utf-8"), encoding="utf-8")
        (Path(tmp) / "dataset_info.json").write_text(json.dumps({"typed": TYPED_INFO}), encoding="utf-8")
        data_args = DataArguments(template="qwen3", dataset_dir=tmp)
        tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(tokenizer_dir)))["tokenizer"]
        processor = SupervisedDatasetProcessor(template=get_template_and_fix_tokenizer(tokenizer, data_args),
                                               tokenizer=tokenizer, processor=None, data_args=data_args)
        [attr] = get_dataset_list(["typed"], tmp)
        converter = get_dataset_converter(attr.formatting, attr, data_args)
        errors: list[str | None] = []
        for example in load_dataset("json", data_files=f"{tmp}/typed_parts.jsonl", split="train"):
            try:
                processor.preprocess_dataset({key: [value] for key, value in converter(example).items()})
                errors.append(None)
            except Exception as exc:  # noqa: BLE001 - the refusal is the golden
                errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"), help="the shared corpus (Phi-3)")
    args = parser.parse_args()
    if version("llamafactory") != "0.9.5":
        sys.exit(f"llamafactory {version('llamafactory')} is installed; these goldens are for 0.9.5")
    sys.path.insert(0, str(ROOT / "tools"))
    import llamafactory_goldens

    llamafactory_goldens._without_audio()
    out = {"versions": {p: version(p) for p in ("llamafactory", "transformers", "tokenizers")},
           "rows": "fixtures/llamafactory-rows/feedback.json", "cases": {}}
    for template, tokenizer in TEMPLATES.items():
        folder = (Path(args.corpus) / "tokenizers" if tokenizer.startswith("phi") else ROOT / "fixtures" / "tokenizers") / tokenizer
        out["cases"][template] = {"tokenizer": tokenizer, "settings": {
            name: {"overrides": overrides, "rows": run(template, folder, overrides)} for name, overrides in SETTINGS.items()}}
    out["typed_parts_supervised_qwen3"] = typed_parts_errors(ROOT / "fixtures" / "tokenizers" / "qwen3")
    OUT.write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(OUT, sum(len(s["rows"]) for c in out["cases"].values() for s in c["settings"].values()))


if __name__ == "__main__":
    main()
