"""Write fixtures/axolotl-unmapped-roles/goldens.json: what axolotl 0.19.0's chat_template strategy does with ShareGPT
tool rows whose ``function_call``/``observation`` tags the config does not map (issue 34 item 7). axolotl maps the
roles it is told of and hands the rest to the chat template as they are: Gemma 3's template raises on them
("Conversation roles must alternate", and the dataset map stops the run), ChatML renders them as roles.

The rows are LLaMA-Factory's glaive_toolcall_en_demo.json from the shared corpus (read in place, never copied);
the goldens hold, per template, each row's error or a digest of its ids and labels.
tests/goldens/axolotl.py (suite axolotl-unmapped-roles) replays them against ``mldebug inspect-data --config``.

    python tools/axolotl_unmapped_roles_golden.py --wheel /work/venvs/axolotl-whl
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS", ROOT.parent / "shared" / "corpus"))
ROWS = CORPUS / "datasets" / "llama-factory" / "glaive_toolcall_en_demo.json"
OUT = ROOT / "fixtures" / "axolotl-unmapped-roles" / "goldens.json"
ENTRY = {"field_messages": "conversations", "message_property_mappings": {"role": "from", "content": "value"}}
# (axolotl's named template, tokenizer folder under fixtures/)
CASES = {"gemma3": "processors/gemma-3", "chatml": "tokenizers/qwen2.5-instruct"}


def digest(ids: list[int], labels: list[int]) -> str:
    return hashlib.sha1(json.dumps([ids, labels], separators=(",", ":")).encode()).hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheel", type=Path, required=True, help="the unpacked axolotl-0.19.0 wheel")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "tools"))
    import axolotl_goldens

    chat_template, dict_default = axolotl_goldens.load_axolotl(args.wheel)
    from axolotl.utils.schemas.datasets import SFTDataset
    from transformers import AutoTokenizer

    rows = json.loads(ROWS.read_text(encoding="utf-8"))
    cases = {}
    for template, folder in CASES.items():
        tokenizer = AutoTokenizer.from_pretrained(str(ROOT / "fixtures" / folder))
        config = dict_default({"sequence_len": 100_000, "train_on_inputs": False, "chat_template": template})
        entry = SFTDataset(path=ROWS.name, type="chat_template", chat_template=template, **ENTRY).model_dump(exclude_none=True)
        strategy = chat_template.load(tokenizer, config, dict_default(entry))
        out = []
        for row in rows:
            try:
                got = strategy.tokenize_prompt(json.loads(json.dumps(row)))
            except Exception as exc:  # noqa: BLE001 - the template raises: axolotl's dataset map stops
                out.append({"error": f"{type(exc).__name__}: {str(exc)[:120]}"})
                continue
            out.append({"digest": digest(list(got["input_ids"]), list(got["labels"]))})
        cases[template] = {"tokenizer": folder, "rows": out}
        print(template, sum("error" in r for r in out), "of", len(out), "rows raise")
    from importlib.metadata import version

    document = {"axolotl": "0.19.0", "transformers": version("transformers"), "rows": str(ROWS.relative_to(CORPUS)),
                "entry": ENTRY, "produced_by": "tools/axolotl_unmapped_roles_golden.py", "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
