"""Benchmark: inspect-data --all on DPO pairs against the same rows as supervised conversations.

    python benchmarks/bench_preference.py [--rows 3000] [--repeat 3] [--workers 1] [--tokenizer DIR]

Builds two JSON Lines files of the same rows from LLaMA-Factory's dpo_en_demo.json (read in place from the shared
corpus; our fixtures/trl-1.16.0-preference/rows_dpo_conversational.json when the corpus is absent), cycled to
--rows rows:
  dpo: the ranking rows as they are (conversations + chosen + rejected): prompt, prompt+chosen and prompt+rejected
       rendered and tokenized per row;
  sft: conversations + the chosen reply as one ShareGPT conversation;
  sft_same_size: conversations + chosen + a user turn asking again + rejected: SFT rows holding as much text as the
       pairs (the pairs' rejected reply is text the sft rows do not have, and tokenizing is most of the time).
Each file is inspected end to end (`mldebug inspect-data --all -f json`, a fresh process, start-up included);
the table gives rows/s and message characters per second (median over --repeat, interleaved). Not part of the
tests. The machine is shared: compare the ratios of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus")
CORPUS_DPO = CORPUS / "datasets" / "llama-factory" / "dpo_en_demo.json"
OWN_DPO = ROOT / "fixtures" / "trl-1.16.0-preference" / "rows_dpo_conversational.json"


def source_rows() -> list[dict]:
    if CORPUS_DPO.is_file():
        return json.loads(CORPUS_DPO.read_text())
    turns = {"user": "human", "assistant": "gpt", "system": "system"}
    return [{"conversations": [{"from": turns[m["role"]], "value": m["content"]} for m in r["prompt"]],
             "chosen": {"from": "gpt", "value": r["chosen"][0]["content"]},
             "rejected": {"from": "gpt", "value": r["rejected"][0]["content"]}}
            for r in json.loads(OWN_DPO.read_text())]


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def timed(path: Path, tokenizer: str, workers: int) -> tuple[float, dict]:
    command = [sys.executable, "-m", "mldebug_cli", "inspect-data", str(path), "-t", tokenizer, "--all",
               "-f", "json", "--exit-zero", "--workers", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, json.loads(done.stdout)["summary"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"))
    args = parser.parse_args()
    base = source_rows()
    rows = [base[i % len(base)] for i in range(args.rows)]
    sft = [{"conversations": r["conversations"] + [r["chosen"]]} for r in rows]
    again = {"from": "human", "value": "Give me another answer."}
    same_size = [{"conversations": r["conversations"] + [r["chosen"], again, r["rejected"]]} for r in rows]
    chars = {"dpo": _chars(rows), "sft": _chars(sft), "sft_same_size": _chars(same_size)}
    times: dict[str, list[float]] = {name: [] for name in chars}
    with tempfile.TemporaryDirectory() as folder:
        files = {"dpo": write(Path(folder) / "dpo.jsonl", rows), "sft": write(Path(folder) / "sft.jsonl", sft),
                 "sft_same_size": write(Path(folder) / "sft_same_size.jsonl", same_size)}
        for _ in range(args.repeat):
            for name, path in files.items():
                seconds, summary = timed(path, args.tokenizer, args.workers)
                assert summary["rows_checked"] == args.rows, summary
                times[name].append(seconds)
    print(f"{args.rows} rows from {CORPUS_DPO.name if CORPUS_DPO.is_file() else OWN_DPO.name}, "
          f"workers {args.workers}, median of {args.repeat}")
    print("| data | seconds (min-max) | rows/s | message chars/s |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} ({min(values):.1f}-{max(values):.1f}) | {args.rows / median:,.0f} |"
              f" {chars[name] / median:,.0f} |")
    for other in ("sft", "sft_same_size"):
        ratio = statistics.median(times[other]) / statistics.median(times["dpo"])
        print(f"dpo rows/s = {ratio:.2f} x {other} rows/s")
    return 0


def _chars(rows: list[dict]) -> int:
    """Characters of message text: the conversations, and the chosen and rejected replies where a row has them."""
    turns = [t for r in rows for t in (*r["conversations"], r.get("chosen"), r.get("rejected")) if t]
    return sum(len(t["value"]) for t in turns)


if __name__ == "__main__":
    sys.exit(main())
