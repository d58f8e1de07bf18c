"""Write fixtures/unsloth-2026.10.9/goldens.json: Unsloth's own train_on_responses_only labels for the project's rows.

Not run in CI: tests/goldens/unsloth.py reads what this wrote and checks that
`mldebug inspect-data --framework unsloth --instruction-part ... --response-part ...` gives the same labels and
drops the same rows.

The input ids are TRL 1.16.0's own (fixtures/trl-1.16.0/goldens-*.json, written by tools/trl_goldens.py by running
``SFTTrainer`` on rows-messages.json, default and max_length 64): Unsloth trains through TRL's ``SFTTrainer`` and
``train_on_responses_only`` masks the ids the trainer prepared. This script hands those ids to the real
``unsloth_zoo.dataset_utils.train_on_responses_only`` (the function ``unsloth.chat_templates`` re-exports; with
``return_function=True`` it returns the masking function the trainer's dataset is mapped with) and records the
labels, and which rows are left with no trained token (Unsloth filters those out of the dataset).

Usage (CPU, offline; in its own venv, since unsloth_zoo pins trl<=1.15 and transformers<=5.17):

    pip install torch==2.13.0 transformers==5.17.0 'datasets<5' sentencepiece psutil msgspec
    pip install --no-deps unsloth_zoo==2026.10.9
    UNSLOTH_ZOO_DISABLE_GPU_INIT=1 HF_HUB_OFFLINE=1 python tools/unsloth_goldens.py

``UNSLOTH_ZOO_DISABLE_GPU_INIT=1`` is unsloth_zoo's own switch for importing it without its device set-up (and
without the ``unsloth`` package); the masking code does not depend on the device.
"""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRL_GOLDENS = ROOT / "fixtures" / "trl-1.16.0"
OUT = ROOT / "fixtures" / "unsloth-2026.10.9" / "goldens.json"
PINS = {"unsloth_zoo": "2026.10.9"}
RECORDED = ("unsloth_zoo", "transformers", "tokenizers", "torch")
ROWS_FILE = "rows-messages.json"
# the markers Unsloth's notebooks pass for each chat format (instruction_part, response_part)
PARTS = {
    "qwen2.5-instruct": ("<|im_start|>user\n", "<|im_start|>assistant\n"),
    "qwen3": ("<|im_start|>user\n", "<|im_start|>assistant\n"),
    "llama3-instruct": ("<|start_header_id|>user<|end_header_id|>\n\n",
                        "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    "mistral-nemo-instruct": ("[INST]", "[/INST]"),
}
# TRL setting whose prepared ids are masked -> the inspect-data flags that ask for the same ids
TRL_SETTINGS = {"default": [], "max_length_64": ["--max-length", "64"]}
VARIANTS = {"responses": (False, []), "last_response_only": (True, ["--train-on", "last"])}
# a response_part with a typo (issue 21): it matches nowhere, and every row is left untrained
MISTYPED = {"qwen2.5-instruct": "<|im_start|>asistant\n"}


def main() -> None:
    for name, pinned in PINS.items():
        if version(name) != pinned:
            sys.exit(f"{name} {version(name)} is installed; these goldens are for {name}=={pinned}")
    if os.environ.get("UNSLOTH_ZOO_DISABLE_GPU_INIT") != "1":
        sys.exit("set UNSLOTH_ZOO_DISABLE_GPU_INIT=1 (unsloth_zoo's switch for importing it without a GPU)")
    from transformers import AutoTokenizer
    from unsloth_zoo.dataset_utils import train_on_responses_only

    out = {"versions": {name: version(name) for name in RECORDED}, "rows_file": f"trl-1.16.0/{ROWS_FILE}",
           "input_ids_from": "trl-1.16.0/goldens-<tokenizer>.json (SFTTrainer's prepared rows)", "cases": []}
    for tok_name, (instruction, response) in PARTS.items():
        tokenizer = AutoTokenizer.from_pretrained(str(ROOT / "fixtures" / "tokenizers" / tok_name))
        trl = json.loads((TRL_GOLDENS / f"goldens-{tok_name}.json").read_text(encoding="utf-8"))
        for trl_setting, length_flags in TRL_SETTINGS.items():
            prepared = next(s for s in trl["settings"] if s["rows_file"] == ROWS_FILE and s["setting"] == trl_setting)
            variants = dict(VARIANTS)
            if tok_name in MISTYPED and trl_setting == "default":
                variants["mistyped_response_part"] = (False, [])
            for variant, (last_only, variant_flags) in variants.items():
                response = MISTYPED[tok_name] if variant == "mistyped_response_part" else PARTS[tok_name][1]
                mask = train_on_responses_only(None, instruction_part=instruction, response_part=response,
                                               tokenizer=tokenizer, return_function=True, last_response_only=last_only)
                ids = [row["input_ids"] for row in prepared["rows"]]
                labels = mask({"input_ids": ids})["labels"]
                rows = [{"row": row["row"], "input_ids": row_ids, "labels": row_labels}
                        for row, row_ids, row_labels in zip(prepared["rows"], ids, labels)]
                dropped = sorted(prepared["dropped"] + [r["row"] for r in rows if all(x == -100 for x in r["labels"])])
                out["cases"].append({
                    "tokenizer": tok_name, "trl_setting": trl_setting, "variant": variant,
                    "instruction_part": instruction, "response_part": response,
                    "inspect_flags": ["--instruction-part", instruction, "--response-part", response,
                                      *length_flags, *variant_flags],
                    "dropped": dropped, "rows": [r for r in rows if r["row"] not in dropped],
                })
                print(tok_name, trl_setting, variant, f"dropped {dropped}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(dumps(out), encoding="utf-8")


def dumps(golden: dict) -> str:
    """Indented JSON with each row on one line (readable diffs when a version changes)."""
    cases = []
    for case in golden["cases"]:
        head = json.dumps({k: v for k, v in case.items() if k != "rows"}, ensure_ascii=False)
        body = ",\n   ".join(json.dumps(r) for r in case["rows"])
        cases.append(head[:-1] + f', "rows": [\n   {body}\n  ]}}')
    top = json.dumps({k: v for k, v in golden.items() if k != "cases"}, ensure_ascii=False)
    return top[:-1] + ', "cases": [\n  ' + ",\n  ".join(cases) + "\n]}\n"


if __name__ == "__main__":
    main()
