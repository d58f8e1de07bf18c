"""Write fixtures/content-parts/: what each framework's own code does with content parts of every form and with
per-message and per-part weights (issue 34 item 1).

The rows (``rows.json``, written here) hold content parts in every shape users send: LLaMA-Factory v1's
``{"type": "text", "value": ...}``, transformers' ``{"type": "text", "text": ...}``, image and image_url parts,
a part of a type no template knows, a ``content`` key, an empty list, axolotl's per-part ``train``/``weight``
flags, LLaMA-Factory v1's per-message ``loss_weight``, and rows with no assistant turn.

Three writers, one per framework, each run where that framework is installed:

- ``transformers`` (mldebug's venv): ``tokenizer.apply_chat_template(messages, tokenize=True)`` as a bare Trainer
  user calls it on each row (their collator trains every token), or what it raises;
- ``axolotl --wheel DIR`` (the unpacked axolotl-0.19.0 wheel, see tools/axolotl_goldens.py): its ``chat_template``
  strategy (``load`` then ``tokenize_prompt``) with its defaults, through its dataset schema;
- ``llamafactory`` (LLaMA-Factory 0.9.5's venv, see tools/llamafactory_goldens.py): its ShareGPT converter
  (OpenAI-style role/content tags) and ``SupervisedDatasetProcessor`` with its ``llama3`` and ``qwen`` templates.

tests/goldens/ (suites *-content-parts) replays them against ``mldebug inspect-data --framework NAME``.

    python tools/content_parts_goldens.py transformers
    python tools/content_parts_goldens.py axolotl --wheel /tmp/axo/whl
    HF_HUB_OFFLINE=1 /work/venvs/lf-vision/bin/python tools/content_parts_goldens.py llamafactory
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
OUT = FIXTURES / "content-parts"
TOKENIZERS = ("qwen2.5-instruct", "qwen3", "llama3-instruct", "mistral-nemo-instruct")  # all from npm
LF_CASES = (("llama3", "llama3-instruct"), ("qwen", "qwen2.5-instruct"))


def text(value: str, key: str = "text") -> dict:
    return {"type": "text", key: value}


def rows() -> list[dict]:
    """One row per form; every row but the last three has an assistant turn."""
    def chat(question, reply, user: dict | None = None, assistant: dict | None = None) -> dict:
        return {"messages": [{"role": "user", "content": question, **(user or {})},
                             {"role": "assistant", "content": reply, **(assistant or {})}]}

    return [
        chat([text("hi", "value")], [text("hello there", "value")],  # LLaMA-Factory v1, weights as its demo sets them
             user={"loss_weight": 0.0}, assistant={"loss_weight": 1.0}),
        chat([text("What is 2+2?")], "4."),  # transformers' text parts
        chat([{"type": "image"}, text("What is in it?")], "A cat."),
        chat([{"type": "image_url", "image_url": {"url": "cat.png"}}, text("Describe it.")], "A cat on a mat."),
        chat([{"type": "audio_note", "text": "hum"}], "A hum."),  # a part type nobody reads
        chat("Name a colour.", [text("Red.", "value")]),  # parts in the reply only
        chat("Name a colour.", "Blue.", user={"loss_weight": 1.0}, assistant={"loss_weight": 0.0}),  # weights only
        chat("Why?", [text("Think first.", "text") | {"train": False}, text(" Because.") | {"train": True}]),
        chat("Why not?", [text("Maybe.") | {"weight": 0}, text(" No.") | {"weight": 1}]),
        chat([text("A part under content", "content")], "Noted."),
        chat([], "Nothing asked."),  # an empty list of parts
        chat([text("One"), text(" two")], [text("Three"), text(" four")]),  # several text parts
        {"messages": [{"role": "user", "content": "Is the chain worn?"}]},  # no assistant turn
        {"messages": [{"role": "system", "content": "Be brief."}]},
        {"messages": [{"role": "user", "content": [text("Only parts, no reply.")]}]},
    ]


def _write(name: str, meta: dict, cases: dict) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "rows.json").write_text(json.dumps(rows(), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({**meta, "produced_by": "tools/content_parts_goldens.py", "cases": cases},
                               ensure_ascii=False) + "\n", encoding="utf-8")
    print(path, {k: sum("error" in r for r in v) for k, v in cases.items()})


def _error(exc: BaseException) -> dict:
    return {"error": f"{type(exc).__name__}: {exc}"[:300]}


def transformers_goldens() -> None:
    from transformers import AutoTokenizer

    cases = {}
    for name in TOKENIZERS:
        tokenizer = AutoTokenizer.from_pretrained(str(FIXTURES / "tokenizers" / name))
        out = []
        for row in rows():
            try:
                ids = tokenizer.apply_chat_template(row["messages"], tokenize=True, return_dict=True)["input_ids"]
            except Exception as exc:  # the template raises: the user's preprocessing stops there
                out.append(_error(exc))
                continue
            out.append({"input_ids": list(ids), "labels": list(ids)})
        cases[name] = out
    _write("transformers", {"transformers": version("transformers"), "tokenizers": version("tokenizers"),
                            "call": "tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)"}, cases)


def axolotl_goldens(wheel: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    from axolotl_goldens import load_axolotl
    from transformers import AutoTokenizer

    chat_template, DictDefault = load_axolotl(wheel)
    from axolotl.utils.schemas.datasets import SFTDataset

    logging.disable(logging.WARNING)
    cases = {}
    for name in TOKENIZERS:
        tokenizer = AutoTokenizer.from_pretrained(str(FIXTURES / "tokenizers" / name))
        cfg = DictDefault({"sequence_len": 100_000, "train_on_inputs": False})
        entry = DictDefault(SFTDataset(path="rows.json", type="chat_template").model_dump(exclude_none=True))
        strategy = chat_template.load(tokenizer, cfg, entry)
        out = []
        for row in rows():
            try:
                result = strategy.tokenize_prompt(json.loads(json.dumps(row)))
            except Exception as exc:  # axolotl's dataset map stops there
                out.append(_error(exc))
                continue
            out.append({"input_ids": list(result["input_ids"]), "labels": list(result["labels"])})
        cases[name] = out
    _write("axolotl", {"axolotl": "0.19.0", "transformers": version("transformers"),
                       "axolotl_cfg": {"sequence_len": 100_000, "datasets": [{"type": "chat_template"}]}}, cases)


def llamafactory_goldens() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    import tempfile

    from datasets import load_dataset
    from llamafactory_goldens import _without_audio

    _without_audio()
    from llamafactory.data.converter import get_dataset_converter
    from llamafactory.data.parser import get_dataset_list
    from llamafactory.data.processor.supervised import SupervisedDatasetProcessor
    from llamafactory.data.template import get_template_and_fix_tokenizer
    from llamafactory.hparams import DataArguments, ModelArguments
    from llamafactory.model import load_tokenizer

    logging.disable(logging.WARNING)
    info = {"parts": {"file_name": "rows.jsonl", "formatting": "sharegpt", "columns": {"messages": "messages"},
                      "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                               "assistant_tag": "assistant", "system_tag": "system"}}}
    cases = {}
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "dataset_info.json").write_text(json.dumps(info))
        for template, name in LF_CASES:
            data_args = DataArguments(template=template, dataset_dir=folder)
            tokenizer = load_tokenizer(ModelArguments(model_name_or_path=str(FIXTURES / "tokenizers" / name)))["tokenizer"]
            chosen = get_template_and_fix_tokenizer(tokenizer, data_args)
            processor = SupervisedDatasetProcessor(template=chosen, tokenizer=tokenizer, processor=None, data_args=data_args)
            [attr] = get_dataset_list(["parts"], folder)
            converter = get_dataset_converter(attr.formatting, attr, data_args)
            out = []
            for row in rows():  # one file per row: datasets would unify the content column's types across rows
                one = Path(folder) / "rows.jsonl"
                one.write_text(json.dumps(row) + "\n")
                try:
                    [example] = load_dataset("json", data_files=str(one), split="train", download_mode="force_redownload")
                    encoded = processor.preprocess_dataset({k: [v] for k, v in converter(example).items()})
                except Exception as exc:  # the converter or the template raises: LLaMA-Factory's run stops
                    out.append(_error(exc))
                    continue
                out.append({"dropped": True} if not encoded["input_ids"] else
                           {"input_ids": encoded["input_ids"][0], "labels": encoded["labels"][0]})
            cases[f"{template}:{name}"] = out
    _write("llamafactory", {"llamafactory": version("llamafactory"), "transformers": version("transformers"),
                            "dataset_info": info}, cases)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=("transformers", "axolotl", "llamafactory"))
    parser.add_argument("--wheel", type=Path, help="the unpacked axolotl-0.19.0 wheel (axolotl only)")
    args = parser.parse_args()
    if args.framework == "transformers":
        transformers_goldens()
    elif args.framework == "axolotl":
        axolotl_goldens(args.wheel)
    else:
        llamafactory_goldens()
