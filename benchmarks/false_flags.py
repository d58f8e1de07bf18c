"""Benchmark: how often the DS and DP checks flag clean, published datasets, and whether each flag is true.

    MLDEBUG_CORPUS=/path/to/corpus python benchmarks/false_flags.py [--only NAME] [--json OUT] [--why]

The datasets are the shared corpus's (LLaMA-Factory's and axolotl's own demo data, read in place), each inspected
(`inspect-data --all`) as the framework it was written for reads it (LLaMA-Factory with its named template for the
tokenizer: SFT, pairwise and KTO rows; axolotl with the tokenizer's template), and, for the TRL path, converted to
TRL's columns the way DS011's, DS027's and DP015's hints say (roles mapped, tools as TRL's function schemas, alpaca as
messages and as plain prompt/completion, ranking rows as implicit-prompt conversations and with an explicit prompt,
KTO rows as prompt/completion/label; written to a temporary folder, never into the repository). Five tokenizers: the
four npm fixtures and the corpus's Phi-3.

For every check and case it prints the rows flagged at warning or error (a finding without a row, about the whole
dataset, counts every row) over the rows checked, and a verdict: "true, verified" when the VERIFIED table below
holds that check, case, tokenizer and row count, with the reason the user should act on it and the real
framework's output that shows it (benchmarks/false_flags_verify.py reruns LLaMA-Factory 0.9.5, TRL 1.16 and
axolotl 0.19.0 on the same rows); "false" for every other flag. The false-flag rate is the false row flags over the
rows checked. `conversation.missingturns.json` is left out: axolotl ships it broken on purpose (turns missing), it
is not clean data (see docs/checks.md, "False flags on clean data").
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

ALL = ("qwen2.5", "qwen3", "llama3", "mistral-nemo", "phi-3")


def _each(*counts: int) -> dict[str, int]:
    return dict(zip(ALL, counts))


# The flags that are true: (check, case) -> (rows flagged per tokenizer, why the user should act on it, the real
# framework's own output that shows it: benchmarks/false_flags_verify.py prints these counts). A flagged cell is
# "true, verified" only when its check, case, tokenizer and row count are here; every other flag counts as false.
_LF_CUT = "LLaMA-Factory 0.9.5's processor at cutoff_len 2048 against 10**6 (false_flags_verify.py lf)"
_TRL = "TRL 1.16's own preparation functions (false_flags_verify.py trl)"
_SETUP = ("the tokenizer's EOS is not the template's turn end and the folder has no generation_config.json listing "
          "it: generation run from this folder does not stop at the turn end (a model folder whose "
          "generation_config.json lists it, as the published Llama 3 and Phi-3 ones do, is not flagged)")
VERIFIED: dict[tuple[str, str], tuple[dict[str, int], str, str]] = {
    ("DS007", "lf/glaive_toolcall_en_demo"): (
        _each(1, 1, 1, 1, 2), "a row longer than the default cutoff_len 2048 loses trained reply tokens",
        _LF_CUT + ": trained labels lost on row 243 (Phi-3: also 51)"),
    ("DS010", "lf/reason_tool_use_demo_50"): (
        _each(50, 50, 50, 50, 50), "content given as typed parts (LLaMA-Factory's v1 format): `llamafactory-cli "
        "train` 0.9.5 raises on every row and stops", "LLaMA-Factory 0.9.5's SupervisedDatasetProcessor raises "
        "TypeError on all 50 rows with each template"),
    ("DP006", "lf/dpo_en_demo"): (
        _each(8, 7, 7, 8, 22), "infer_seqlen cuts the end of a long prompt, its assistant header with it: the "
        "replies are trained after a truncated prompt", _LF_CUT + " (PairwiseDatasetProcessor): prompt labels cut"),
    ("DP006", "lf/kto_en_demo"): (
        _each(8, 8, 8, 8, 15), "as for dpo_en_demo: the prompt's end and assistant header are cut",
        _LF_CUT + " (FeedbackDatasetProcessor): prompt labels cut"),
    ("DP008", "lf/kto_en_demo"): (
        {"mistral-nemo": 1, "phi-3": 1}, "a reply holds '</s>' (row 139: Mistral's EOS) or '<|user|>' (row 257: "
        "Phi-3's user marker) as text; it is tokenized and trained as that special token",
        "LLaMA-Factory 0.9.5's labels train id 2 (Mistral) / 32010 (Phi-3) inside the reply"),
    ("DS004", "axolotl/conversation"): (
        {"llama3": 1, "phi-3": 1}, "axolotl's train_on_eos: turn trains the tokenizer's EOS, which these templates "
        "never write: '<|eot_id|>' / '<|end|>' is masked in all 6 trained turns (axolotl warns: 'the turn "
        "terminator won't be trained. Set `eot_tokens`')",
        "axolotl 0.19.0's chat_template strategy: 0 of 12 turn ends trained (false_flags_verify.py axolotl)"),
    ("DS023", "axolotl/conversation"): ({"llama3": 1, "phi-3": 1}, _SETUP, "the tokenizer folders' files"),
    ("DS023", "trl/glaive_as_messages"): ({"llama3": 300, "phi-3": 300}, _SETUP, "the tokenizer folders' files"),
    ("DS023", "trl/alpaca_as_messages"): ({"llama3": 999, "phi-3": 999}, _SETUP, "the tokenizer folders' files"),
    ("DS007", "trl/glaive_as_messages"): (
        _each(24, 23, 23, 22, 27), "SFTTrainer trains every token of messages rows and cuts them at its default "
        "max_length 1024: these rows lose the end of their replies", _TRL + ": rows over 1024 tokens"),
    ("DS024", "trl/glaive_as_messages"): (
        {"llama3": 153, "phi-3": 153}, "the template renders only `content`: the tool calls (the rows' point) are "
        "not trained", _TRL + ": the call's name is absent from apply_chat_template's text"),
    ("DS025", "trl/glaive_as_messages"): (
        {"llama3": 191, "phi-3": 191}, "the template ignores `tools`: the model is trained to call functions it "
        "was never shown", _TRL + ": the render is the same with and without tools"),
    ("DS011", "trl/glaive_as_messages"): (
        {"phi-3": 153}, "Phi-3's template has no tool role: the tool results are left out of the rendered rows",
        _TRL + ": the tool turns' text is absent from the render"),
    ("DS009", "trl/glaive_as_messages"): (
        {"mistral-nemo": 300}, "Mistral-Nemo's template raises 'Tool call IDs should be alphanumeric strings with "
        "length 9!' on 153 rows' calls without such ids: SFTTrainer's datasets.map stops, so the run will not start "
        "(that finding is about the whole dataset: it counts all 300 rows)",
        _TRL + ": apply_chat_template raises on 153 rows"),
    ("DP005", "trl/dpo_as_implicit_pairs"): (
        _each(37, 35, 35, 34, 48), "the prompt alone fills max_length 1024: DPOTrainer drops the row silently",
        _TRL + ": the keep_start filter len(prompt_ids) < max_length removes them"),
    ("DP005", "trl/dpo_as_explicit_prompt"): (
        _each(37, 35, 35, 34, 48), "as for the implicit pairs", _TRL + ": as for the implicit pairs"),
    ("DP006", "trl/dpo_as_implicit_pairs"): (
        {"qwen2.5": 2, "qwen3": 1, "llama3": 1}, "the collator cuts one reply far more than the other at 1024 "
        "tokens: the pair is judged on unequal, cut replies", _TRL + ": DataCollatorForPreference's completion masks"),
    ("DP006", "trl/dpo_as_explicit_prompt"): (
        {"qwen2.5": 2, "qwen3": 1, "llama3": 1}, "as for the implicit pairs", _TRL + ": as for the implicit pairs"),
    ("DP004", "trl/dpo_as_implicit_pairs"): (
        {"mistral-nemo": 80}, "Mistral-Nemo renders the system prompt only with the last user turn: rendered "
        "without the reply the prompt differs, so TRL's completion starts inside the prompt and the system prompt "
        "leaves the training sequence (TRL warns the same)", _TRL + ": common_prefix_length < len(prompt_ids)"),
    ("DP004", "trl/dpo_as_explicit_prompt"): (
        {"mistral-nemo": 80}, "as for the implicit pairs", _TRL + ": as for the implicit pairs"),
    ("DP004", "trl/v1_dpo_as_implicit_pairs"): (
        {"mistral-nemo": 10}, "as for dpo_en_demo: every v1 row has a system prompt", _TRL + ": as for dpo_en_demo"),
    ("DP005", "trl/kto_as_prompt_completion"): (
        _each(20, 20, 20, 19, 28), "the prompt alone fills max_length 1024: KTOTrainer drops the row",
        _TRL + ": the filter len(prompt_ids) < max_length removes them"),
    ("DP008", "trl/kto_as_prompt_completion"): (
        {"mistral-nemo": 1, "phi-3": 1}, "as under LLaMA-Factory: '</s>' / '<|user|>' written in a reply",
        _TRL + ": the special id is in the completion ids"),
}


def verdict(case: str, tokenizer: str, code: str, count: int) -> tuple[bool, str]:
    """(true, why) for a flagged cell: true only when the VERIFIED table holds this exact count."""
    entry = VERIFIED.get((code, case))
    if entry is None:
        return False, "no verified reason"
    counts, why, how = entry
    if counts.get(tokenizer) != count:
        return False, f"verified count is {counts.get(tokenizer, 0)}, not {count}"
    return True, f"{why} [{how}]"


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
    parser.add_argument("--why", action="store_true", help="print each true flag's full reason and how it was verified")
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
                    true, why = verdict(name, tokenizer, code, count)
                    table.append({"case": name, "framework": framework, "tokenizer": tokenizer, "check": code,
                                  "flagged": count, "rows": rows, "verdict": "true, verified" if true else "false",
                                  "why": why})
                    print(f"{name:32} {framework:14} {tokenizer:13} {code} {count:>4}/{rows:<4} "
                          f"{'true, verified' if true else 'FALSE'}: {why if not true or args.why else why.split(' [')[0][:60]}",
                          flush=True)
                if not flagged:
                    table.append({"case": name, "framework": framework, "tokenizer": tokenizer, "flagged": 0, "rows": rows})
                    print(f"{name:32} {framework:14} {tokenizer:13} clean 0/{rows}", flush=True)
    cells = [t for t in table if "check" in t]
    false = [t for t in cells if t["verdict"] == "false"]
    total = sum(t["rows"] for t in table if "rows" in t and "check" not in t) + sum(
        {(t["case"], t["tokenizer"]): t["rows"] for t in cells}.values())
    runs = len({(t["case"], t["tokenizer"]) for t in table})
    print(f"\n{total} rows checked over {runs} case x tokenizer runs; could not run: {sum('error' in t for t in table)}")
    print(f"flagged cells: {len(cells)} ({len(cells) - len(false)} true, verified; {len(false)} false)")
    print(f"row flags (summed over checks): {sum(t['flagged'] for t in cells)} "
          f"({sum(t['flagged'] for t in cells) - sum(t['flagged'] for t in false)} true, verified; "
          f"{sum(t['flagged'] for t in false)} false)")
    print(f"false-flag rate: {sum(t['flagged'] for t in false)} / {total} rows = "
          f"{sum(t['flagged'] for t in false) / max(total, 1):.4%}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
