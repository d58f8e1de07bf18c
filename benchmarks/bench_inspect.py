"""Benchmark: mldebug inspect-data --all against the physical floor and the naive per-row loop.

    python benchmarks/bench_inspect.py [--rows 20000] [--repeat 3] [--tokenizer fixtures/tokenizers/qwen2.5-instruct]

Generates a deterministic synthetic dataset of multi-turn conversations from the alpaca demo rows
(1-4 turns each), then measures, each in its own process so peak RSS is its own:
  (a) floor: render every conversation with the compiled template + one batched tokenize
  (b) naive: per-row apply_chat_template(tokenize=True, return_dict=True)
  (c) mldebug inspect-data --all --output-format json, end to end as a user runs it (process start included);
      (c') as axolotl masks, (c'') as LLaMA-Factory's supervised processor encodes (its template parsed from the
      tokenizer's, every slot tokenized on its own)
and reports conversations/s, tokens/s, peak RSS and the ratios (c)/(a), (c)/(b).
With --repeat N the four runs are interleaved N times and the median wall time is reported with its range
(timings on a shared 2-core machine vary by 10-30% from run to run). Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# LLaMA-Factory's alpaca demo rows, read in place from the shared corpus (never copied into the repository).
ALPACA = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus") / "datasets/llama-factory/alpaca_en_demo.json"


def make_dataset(path: Path, n: int, seed: int = 0) -> None:
    rows = json.loads(ALPACA.read_text())
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for _ in range(n):
            messages = []
            for row in rng.sample(rows, rng.randint(1, 4)):
                user = row["instruction"] + ("\n" + row["input"] if row["input"] else "")
                messages += [{"role": "user", "content": user}, {"role": "assistant", "content": row["output"]}]
            fh.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")


def _conversations(path: Path) -> list[list[dict]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["messages"] for line in fh]


def floor(path: str, tokenizer_dir: str) -> dict:
    sys.modules["torch"] = None  # a floor imports nothing it does not use (mldebug keeps torch out the same way)
    from transformers import AutoTokenizer
    from transformers.utils.chat_template_utils import _compile_jinja_template

    start = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    template = _compile_jinja_template(tok.chat_template)
    special = dict(tok.special_tokens_map)
    texts = [template.render(messages=m, add_generation_prompt=False, **special) for m in _conversations(Path(path))]
    ids = tok(texts, add_special_tokens=False)["input_ids"]
    return {"seconds": time.perf_counter() - start, "tokens": sum(map(len, ids)), "rows": len(texts)}


def naive(path: str, tokenizer_dir: str) -> dict:
    from transformers import AutoTokenizer

    start = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    tokens = rows = 0
    for messages in _conversations(Path(path)):
        tokens += len(tok.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"])
        rows += 1
    return {"seconds": time.perf_counter() - start, "tokens": tokens, "rows": rows}


def in_child(kind: str, path: Path, tokenizer_dir: str) -> dict:
    """Run floor/naive in a fresh interpreter; time includes imports, like (c)."""
    start = time.perf_counter()
    out = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, __file__, "--child", kind, str(path), tokenizer_dir],
        capture_output=True, text=True, check=True,
    )
    wall = time.perf_counter() - start
    result = json.loads(out.stdout)
    result["wall"] = wall
    result["rss_mib"] = int(out.stderr.strip().splitlines()[-1]) / 1024
    return result


def mldebug(path: Path, tokenizer_dir: str, extra: list[str]) -> dict:
    cmd = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "mldebug_cli", "inspect-data", str(path),
           "--tokenizer", tokenizer_dir, "--all", "--output-format", "json", "-o", os.devnull, *extra]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise SystemExit(f"mldebug failed: {out.stderr[-2000:]}")
    rss_kib = int(out.stderr.strip().splitlines()[-1])
    return {"wall": wall, "rss_mib": rss_kib / 1024}


def startup(tokenizer_dir: str, repeat: int = 5) -> dict[str, float]:
    """Median wall time of commands whose cost is start-up: help, explain, and inspect-data on one row."""
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "one.jsonl"
        make_dataset(one, 1)
        commands = {
            "mldebug --help": ["--help"],
            "mldebug explain no-trainable-tokens": ["explain", "no-trainable-tokens"],
            "mldebug inspect-data (1 row)": ["inspect-data", str(one), "--tokenizer", tokenizer_dir, "-o", os.devnull],
        }
        out = {}
        for name, args in commands.items():
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-m", "mldebug_cli", *args], capture_output=True, check=False)
                times.append(time.perf_counter() - start)
            out[name] = statistics.median(times)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds; the median is reported")
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--child", nargs=3)
    parser.add_argument("--skip-naive", action="store_true")
    args = parser.parse_args()
    if args.child:
        kind, path, tok = args.child
        print(json.dumps({"floor": floor, "naive": naive}[kind](path, tok)))
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "conversations.jsonl"
        make_dataset(data, args.rows)
        for _ in range(max(1, args.repeat)):
            a = in_child("floor", data, args.tokenizer)
            tokens = a["tokens"]
            runs.setdefault("(a) floor", []).append(a)
            if not args.skip_naive:
                runs.setdefault("(b) naive", []).append(in_child("naive", data, args.tokenizer))
            runs.setdefault("(c) mldebug, default masking", []).append(mldebug(data, args.tokenizer, []))
            runs.setdefault("(c') mldebug, --train-on assistant", []).append(
                mldebug(data, args.tokenizer, ["--train-on", "assistant", "--framework", "axolotl"]))
            runs.setdefault("(c'') mldebug, --framework llama-factory", []).append(
                mldebug(data, args.tokenizer, ["--framework", "llama-factory"]))
    wall = {name: statistics.median(r["wall"] for r in rs) for name, rs in runs.items()}
    print(f"{args.rows} conversations, {tokens:,} tokens ({tokens / args.rows:.0f} per conversation), "
          f"{os.cpu_count()} cores, median of {max(1, args.repeat)} interleaved runs")
    print(f"{'':40} {'wall s':>8} {'range s':>13} {'conv/s':>9} {'tokens/s':>11} {'peak RSS MiB':>13}")
    for name, rs in runs.items():
        spread = f"{min(r['wall'] for r in rs):.2f}-{max(r['wall'] for r in rs):.2f}"
        rss = max(r["rss_mib"] for r in rs)
        print(f"{name:40} {wall[name]:8.2f} {spread:>13} {args.rows / wall[name]:9.0f} "
              f"{tokens / wall[name]:11.0f} {rss:13.0f}")
    print("start-up (median of 5):", ", ".join(f"{k} {v:.2f} s" for k, v in startup(args.tokenizer).items()))
    for name in runs:
        if name.startswith("(c"):
            line = f"{name}: {wall[name] / wall['(a) floor']:.2f}x the floor"
            if "(b) naive" in runs:
                line += f", {wall['(b) naive'] / wall[name]:.2f}x faster than naive"
            print(line)


if __name__ == "__main__":
    main()
