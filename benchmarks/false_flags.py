"""Benchmark: how often the DS and DP checks flag clean, published datasets (the false-flag table).

    MLDEBUG_CORPUS=/path/to/corpus python benchmarks/false_flags.py [--only NAME] [--json OUT]

The datasets are the shared corpus's (LLaMA-Factory's and axolotl's own demo data, read in place), each inspected
(`inspect-data --all`) as the framework it was written for reads it (LLaMA-Factory with its named template for the
tokenizer, axolotl with the tokenizer's template), and, for the TRL path, converted to TRL's columns the way DS011's,
DS027's and DP015's hints say (roles mapped, ranking rows as implicit-prompt conversations, KTO rows as
prompt/completion/label; written to a temporary folder, never into the repository). Five tokenizers: the four npm
fixtures and the corpus's Phi-3.

For every check and case it prints the rows flagged at warning or error (a finding without a row, about the whole
dataset, counts every row) over the rows checked. `conversation.missingturns.json` is left out: axolotl ships it
broken on purpose (turns missing), it is not clean data. A flag that is a real problem of the data is not a false
flag: the table's notes say why for each one left (see README, "False flags on clean data").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus")
LF = CORPUS / "datasets" / "llama-factory"
AXOLOTL = CORPUS / "datasets" / "axolotl"
TOKENIZERS = {
    "qwen2.5": ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct",
    "qwen3": ROOT / "fixtures" / "tokenizers" / "qwen3",
    "llama3": ROOT / "fixtures" / "tokenizers" / "llama3-instruct",
    "mistral-nemo": ROOT / "fixtures" / "tokenizers" / "mistral-nemo-instruct",
    "phi-3": CORPUS / "tokenizers" / "phi-3-mini-instruct",
}
# LLaMA-Factory's template for each tokenizer (its `template:` key, as its examples set it)
LF_TEMPLATES = {"qwen2.5": "qwen", "qwen3": "qwen3", "llama3": "llama3", "mistral-nemo": "mistral", "phi-3": "phi"}
ROLES = {"human": "user", "gpt": "assistant", "system": "system", "observation": "tool"}


def cases(tmp: Path) -> list[tuple[str, Path, str, dict]]:
    """(name, dataset, framework, extra InspectOptions) for every case."""
    out = [
        ("lf/alpaca_en_demo", LF / "alpaca_en_demo.json", "llama-factory", {}),
        ("lf/identity", LF / "identity.json", "llama-factory", {}),
        ("lf/glaive_toolcall_en_demo", LF / "glaive_toolcall_en_demo.json", "llama-factory", {}),
        ("lf/reason_tool_use_demo_50", LF / "reason_tool_use_demo_50.jsonl", "llama-factory", {}),
        ("lf/dpo_en_demo", LF / "dpo_en_demo.json", "llama-factory", {"task": "dpo"}),
        ("lf/kto_en_demo", LF / "kto_en_demo.json", "llama-factory", {"task": "kto"}),
        ("axolotl/alpaca", AXOLOTL / "alpaca.json", "axolotl", {}),
        ("axolotl/conversation", AXOLOTL / "conversation.json", "axolotl", {}),
    ]
    converted = {
        "trl/glaive_as_messages": (_write(tmp / "glaive.jsonl", _glaive_messages()), {}),
        "trl/alpaca_as_messages": (_write(tmp / "alpaca.jsonl", _alpaca_messages()), {}),
        "trl/alpaca_as_prompt_completion": (_write(tmp / "alpaca_pc.jsonl", _alpaca_prompt_completion()), {}),
        "trl/dpo_as_implicit_pairs": (_write(tmp / "dpo.jsonl", _implicit_pairs()), {"task": "dpo"}),
        "trl/dpo_as_explicit_prompt": (_write(tmp / "dpo_prompt.jsonl", _explicit_pairs()), {"task": "dpo"}),
        "trl/v1_dpo_as_implicit_pairs": (_write(tmp / "v1.jsonl", _v1_pairs()), {"task": "dpo"}),
        "trl/kto_as_prompt_completion": (_write(tmp / "kto.jsonl", _kto_rows()), {"task": "kto"}),
    }
    out += [(name, path, "trl", extra) for name, (path, extra) in converted.items()]
    return out


def _read(path: Path) -> list[dict]:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, list) else [data]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _message(turn: dict) -> dict:
    if turn["from"] == "function_call":
        call = json.loads(turn["value"])
        return {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call}]}
    return {"role": ROLES[turn["from"]], "content": turn["value"]}


def _tools(text: str | None) -> list[dict] | None:
    """glaive's tools (a JSON string of bare function definitions) as TRL's documented shape: a list of
    {"type": "function", "function": ...} schemas (None when there are none)."""
    functions = json.loads(text) if text else []
    return [{"type": "function", "function": f} for f in functions] or None


def _glaive_messages() -> list[dict]:
    return [{"messages": [_message(t) for t in r["conversations"]], "tools": _tools(r.get("tools"))}
            for r in _read(LF / "glaive_toolcall_en_demo.json")]


def _alpaca_messages() -> list[dict]:
    return [{"messages": [{"role": "user", "content": r["instruction"] + ("\n" + r["input"] if r.get("input") else "")},
                          {"role": "assistant", "content": r["output"]}]} for r in _read(LF / "alpaca_en_demo.json")]


def _alpaca_prompt_completion() -> list[dict]:
    """alpaca as TRL's plain-text prompt/completion rows (LLaMA-Factory's join: instruction, a newline, input)."""
    return [{"prompt": r["instruction"] + ("\n" + r["input"] if r.get("input") else ""), "completion": r["output"]}
            for r in _read(LF / "alpaca_en_demo.json")]


def _explicit_pairs() -> list[dict]:
    """The ranking rows with TRL's explicit prompt column (conversational): prompt, then one reply per side."""
    return [{"prompt": [_message(t) for t in r["conversations"]], "chosen": [_message(r["chosen"])],
             "rejected": [_message(r["rejected"])]} for r in _read(LF / "dpo_en_demo.json")]


def _implicit_pairs() -> list[dict]:
    out = []
    for r in _read(LF / "dpo_en_demo.json"):
        prompt = [_message(t) for t in r["conversations"]]
        out.append({"chosen": prompt + [_message(r["chosen"])], "rejected": prompt + [_message(r["rejected"])]})
    return out


def _v1_pairs() -> list[dict]:
    def side(messages):
        return [{"role": m["role"], "content": "".join(p.get("value", "") for p in m["content"])
                 if isinstance(m["content"], list) else m["content"]} for m in messages]
    return [{"chosen": side(r["chosen_messages"]), "rejected": side(r["rejected_messages"])}
            for r in _read(LF / "v1_dpo_demo.jsonl")]


def _kto_rows() -> list[dict]:
    return [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:], "label": r["label"]}
            for r in _read(LF / "kto_en_demo.json")]


def run_case(dataset: Path, framework: str, tokenizer: str, extra: dict) -> tuple[int, dict[str, set], str | None]:
    """(rows checked, check code -> flagged rows ('*' for the whole dataset), the error when it could not run)."""
    from mldebug_cli.core.errors import InputError, UsageError
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    options = InspectOptions(dataset=str(dataset), tokenizer=str(TOKENIZERS[tokenizer]), framework=framework,
                             all_rows=True, show=0, workers=1,
                             template=LF_TEMPLATES[tokenizer] if framework == "llama-factory" else None, **extra)
    try:
        report = build_report(options)
    except (InputError, UsageError) as exc:
        return 0, {}, str(exc)
    flagged: dict[str, set] = defaultdict(set)
    for finding in report.findings:
        if finding.severity.rank < 1:
            continue
        row = finding.location.row if finding.location else None
        flagged[finding.code].add("*" if row is None else row)
    rows = report.summary.get("rows_checked") or report.summary.get("pairs") or report.summary.get("rows") or 0
    return int(rows), flagged, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the cases whose name contains this")
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    if not (CORPUS / "README.md").is_file():
        sys.exit(f"needs the shared corpus at {CORPUS} (set MLDEBUG_CORPUS)")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    table = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, dataset, framework, extra in cases(Path(tmp)):
            if args.only and args.only not in name:
                continue
            for tokenizer in TOKENIZERS:
                rows, flagged, error = run_case(dataset, framework, tokenizer, extra)
                if error:
                    table.append({"case": name, "framework": framework, "tokenizer": tokenizer, "error": error})
                    print(f"{name:32} {framework:14} {tokenizer:13} could not run: {error.splitlines()[0][:90]}", flush=True)
                    continue
                for code, which in sorted(flagged.items()):
                    count = rows if "*" in which else len(which)
                    table.append({"case": name, "framework": framework, "tokenizer": tokenizer, "check": code,
                                  "flagged": count, "rows": rows})
                    print(f"{name:32} {framework:14} {tokenizer:13} {code} {count}/{rows}", flush=True)
                if not flagged:
                    table.append({"case": name, "framework": framework, "tokenizer": tokenizer, "flagged": 0, "rows": rows})
                    print(f"{name:32} {framework:14} {tokenizer:13} clean 0/{rows}", flush=True)
    cells = [t for t in table if "check" in t]
    total = sum(t["rows"] for t in table if "rows" in t and "check" not in t) + sum(
        {(t["case"], t["tokenizer"]): t["rows"] for t in cells}.values())
    print(f"\nflagged cells: {len(cells)}; rows flagged (sum over checks): {sum(t['flagged'] for t in cells)} "
          f"of {total} rows checked; could not run: {sum('error' in t for t in table)}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
