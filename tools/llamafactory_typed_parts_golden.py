"""Write fixtures/llamafactory-0.9.5/more/typed-parts.json: the ids LLaMA-Factory 0.9.5's own qwen3 renderer (its v1 data
format, ``llamafactory.v1``) gives our rows of typed content parts (fixtures/llamafactory-rows/typed_parts.jsonl:
``text``, ``reasoning`` and ``tool_call`` parts, tools as a JSON string).

tests/frameworks/test_trust_claims.py checks that mldebug reads those parts as LLaMA-Factory does (text joined into
the content, reasoning as the reasoning, tool_call parts as tool calls): rendered with the Qwen3 tokenizer's own
template, the ids equal these.

Usage, with LLaMA-Factory 0.9.5 in its own venv (see tools/llamafactory_goldens.py):

    HF_HUB_OFFLINE=1 /path/to/venv/bin/python tools/llamafactory_typed_parts_golden.py
"""

from __future__ import annotations

import importlib.machinery
import json
import sys
import types
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "fixtures" / "llamafactory-rows" / "typed_parts.jsonl"
OUT = ROOT / "fixtures" / "llamafactory-0.9.5" / "more" / "typed-parts.json"
TOKENIZER = "qwen3"


def main() -> None:
    if version("llamafactory") != "0.9.5":
        sys.exit(f"llamafactory {version('llamafactory')} is installed; these goldens are for 0.9.5")
    audio = types.ModuleType("torchaudio")  # mm_plugin imports it; text rows never use it
    audio.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules.setdefault("torchaudio", audio)
    from llamafactory.v1.plugins.model_plugins.templates.qwen3 import render_qwen3_messages
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(ROOT / "fixtures" / "tokenizers" / TOKENIZER))
    rows = [json.loads(line) for line in ROWS.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {"versions": {p: version(p) for p in ("llamafactory", "transformers", "tokenizers")},
           "renderer": "llamafactory.v1.plugins.model_plugins.templates.qwen3.render_qwen3_messages",
           "tokenizer": TOKENIZER, "rows": []}
    for row in rows:
        rendered = render_qwen3_messages(tokenizer, row["messages"], row.get("tools"))
        out["rows"].append({"input_ids": list(rendered["input_ids"]), "labels": list(rendered["labels"])})
    OUT.write_text(json.dumps(out) + "\n", encoding="utf-8")
    print(OUT, len(out["rows"]))


if __name__ == "__main__":
    main()
