"""Paths to the fixtures and small helpers the tests share (import as `support`)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TOKENIZERS = FIXTURES / "tokenizers"
DATASETS = FIXTURES / "datasets"
QWEN25 = TOKENIZERS / "qwen2.5-instruct"
QWEN3 = TOKENIZERS / "qwen3"
PHI3 = TOKENIZERS / "phi-3-mini-instruct"
NEMO = TOKENIZERS / "mistral-nemo-instruct"
TRL_TEMPLATES = FIXTURES / "templates" / "trl"
ALPACA = DATASETS / "llama-factory" / "alpaca_en_demo.json"
GLAIVE = DATASETS / "llama-factory" / "glaive_toolcall_en_demo.json"
IDENTITY = DATASETS / "llama-factory" / "identity.json"
AXOLOTL_CONVERSATION = DATASETS / "axolotl" / "conversation.json"
AXOLOTL_MISSING_TURNS = DATASETS / "axolotl" / "conversation.missingturns.json"


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def alpaca_as_messages(row: dict) -> list[dict]:
    user = row["instruction"] + ("\n" + row["input"] if row["input"] else "")
    return [{"role": "user", "content": user}, {"role": "assistant", "content": row["output"]}]
