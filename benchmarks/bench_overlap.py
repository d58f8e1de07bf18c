"""Benchmark: inspect-data --eval-dataset's overlap checks (DS053 exact, DS054 near) on clean data and at scale.

    MLDEBUG_CORPUS=/path/to/corpus python benchmarks/bench_overlap.py [--scale 10000,100000] [--eval-rows 1000]

1. Disjoint sources: each clean SFT dataset of the corpus (LLaMA-Factory's and axolotl's demo data, read in place) as
   the training set against each other one as the eval set. They share no row, so every flag there is a false flag.
2. Seeded 90/10 splits of each dataset (what `val_set_size` does): the flags, and the truth from a brute-force
   comparison of every pair (exact keys and word 5-gram Jaccard): a flag the brute force does not confirm is false,
   a pair it finds that the LSH missed is a miss.
3. Scale: generated training sets of N rows against an eval set, each in a fresh process: seconds and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus")
DATASETS = {
    "lf/alpaca_en_demo": CORPUS / "datasets" / "llama-factory" / "alpaca_en_demo.json",
    "lf/identity": CORPUS / "datasets" / "llama-factory" / "identity.json",
    "lf/glaive_toolcall_en_demo": CORPUS / "datasets" / "llama-factory" / "glaive_toolcall_en_demo.json",
    "lf/reason_tool_use_demo_50": CORPUS / "datasets" / "llama-factory" / "reason_tool_use_demo_50.jsonl",
    "axolotl/alpaca": CORPUS / "datasets" / "axolotl" / "alpaca.json",
    "axolotl/conversation": CORPUS / "datasets" / "axolotl" / "conversation.json",
}
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"  # InspectOptions names one; the pass reads none


def _rows(path: Path) -> list:
    from mldebug_cli.sources.dataset import DatasetSource

    return [r.data for r in DatasetSource(str(path)).records() if r.error is None]


def _write(path: Path, rows: list) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _flags(train: str, eval_path: str) -> tuple[list, float]:
    from mldebug_cli.core import registry
    from mldebug_cli.pipelines.inspect import InspectOptions
    from mldebug_cli.pipelines.overlap import overlap_findings
    from mldebug_cli.sources.dataset import DatasetSource
    from mldebug_cli.sources.overlap import RowReader
    from mldebug_cli.sources.row_formats import detect

    checks = [registry.load(registry.lookup(c)) for c in ("DS053", "DS054")]
    source = DatasetSource(train)
    detection = detect([r.data for r in source.records(list(range(50)))], train)
    options = InspectOptions(dataset=train, tokenizer=str(TOKENIZER), eval_dataset=eval_path, workers=1)
    start = time.perf_counter()
    findings, _ = overlap_findings(options, source, RowReader(detection), checks)
    return findings, time.perf_counter() - start


def _truth(train: list, eval_rows: list, detection, threshold: float) -> set[tuple[int, str]]:
    """Every eval row a training row repeats (exact) or nearly repeats, by comparing every pair."""
    from mldebug_cli.sources.overlap import row_text

    ours = [row_text(i, r, detection) for i, r in enumerate(train)]
    theirs = [row_text(i, r, detection) for i, r in enumerate(eval_rows)]
    keys = {t.key for t in ours}
    found = set()
    for e in theirs:
        if e.key in keys:
            found.add((e.row, "DS053"))
            continue
        for t in ours:
            union = len(e.shingles | t.shingles)
            if union and len(e.shingles & t.shingles) / union >= threshold:
                found.add((e.row, "DS054"))
                break
    return found


def disjoint(tmp: Path) -> None:
    print("1. disjoint sources (train x eval, every flag false)")
    total_rows = total_flags = 0
    for train_name, train_path in DATASETS.items():
        for eval_name, eval_path in DATASETS.items():
            if train_name == eval_name:
                continue
            eval_rows = _rows(eval_path)
            findings, _ = _flags(_write(tmp / "train.jsonl", _rows(train_path)), _write(tmp / "eval.jsonl", eval_rows))
            total_rows += len(eval_rows)
            total_flags += len(findings)
            if findings:
                print(f"   {train_name} x {eval_name}: {len(findings)} flags: {[f.message[:90] for f in findings[:2]]}")
    print(f"   {total_flags} flags on {total_rows:,} eval rows over {len(DATASETS) * (len(DATASETS) - 1)} pairs")


def splits(tmp: Path) -> None:
    from mldebug_cli.sources.row_formats import detect

    print("2. seeded 90/10 splits (flags against a brute-force comparison of every pair)")
    print(f"   {'dataset':30} {'rows':>5} {'eval':>5} {'DS053':>5} {'DS054':>5} {'true':>5} {'false':>5} {'missed':>6}")
    for name, path in DATASETS.items():
        rows = _rows(path)
        if len(rows) < 10:
            print(f"   {name:30} {len(rows):>5}: too few rows to split")
            continue
        order = list(range(len(rows)))
        random.Random(0).shuffle(order)
        cut = max(1, len(rows) // 10)
        eval_rows, train = [rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]
        findings, _ = _flags(_write(tmp / "train.jsonl", train), _write(tmp / "eval.jsonl", eval_rows))
        flagged = {(f.location.row, f.code) for f in findings}
        truth = _truth(train, eval_rows, detect(train[:50], name), 0.8)
        codes = [c for _, c in flagged]
        print(f"   {name:30} {len(rows):>5} {len(eval_rows):>5} {codes.count('DS053'):>5} {codes.count('DS054'):>5} "
              f"{len(flagged & truth):>5} {len(flagged - truth):>5} {len(truth - flagged):>6}")
        for f in findings[:2]:
            print(f"      e.g. {f.code} eval row {f.location.row}: {f.message[:110]}")


def _generated(i: int, rng: random.Random, vocabulary: list[str]) -> dict:
    words = lambda n: " ".join(rng.choice(vocabulary) for _ in range(n))  # noqa: E731
    return {"messages": [{"role": "user", "content": f"{i}: " + words(rng.randint(5, 40))},
                         {"role": "assistant", "content": words(rng.randint(10, 120))}]}


def scale_child(rows: int, eval_rows: int, tmp: str) -> None:
    rng = random.Random(rows)
    vocabulary = [f"w{i}" for i in range(5_000)]
    train_path = Path(tmp) / "train.jsonl"
    with train_path.open("w") as out:
        for i in range(rows):
            out.write(json.dumps(_generated(i, rng, vocabulary)) + "\n")
    eval_path = Path(tmp) / "eval.jsonl"
    eval_path.write_text("".join(json.dumps(_generated(-i, rng, vocabulary)) + "\n" for i in range(1, eval_rows + 1)))
    findings, seconds = _flags(str(train_path), str(eval_path))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the whole process: flat in N when the pass is
    print(json.dumps({"rows": rows, "eval_rows": eval_rows, "seconds": round(seconds, 1), "flags": len(findings),
                      "peak_rss_mib": round(peak / 1024)}))


def scale(sizes: list[int], eval_rows: int) -> None:
    print(f"3. scale: generated training rows against {eval_rows:,} eval rows (fresh process each; one worker)")
    for rows in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([sys.executable, __file__, "--child", str(rows), "--eval-rows", str(eval_rows),
                                  "--tmp", tmp], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        got = json.loads(out)
        print(f"   {got['rows']:>9,} rows: {got['seconds']:>7} s ({got['rows'] / max(got['seconds'], 1e-9):,.0f} rows/s), "
              f"peak RSS {got['peak_rss_mib']} MiB, {got['flags']} flags")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="10000,100000")
    parser.add_argument("--eval-rows", type=int, default=1_000)
    parser.add_argument("--child", type=int)
    parser.add_argument("--tmp")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.child is not None:
        scale_child(args.child, args.eval_rows, args.tmp)
        return
    if not CORPUS.is_dir():
        sys.exit(f"no corpus at {CORPUS}: set MLDEBUG_CORPUS")
    with tempfile.TemporaryDirectory() as tmp:
        disjoint(Path(tmp))
        splits(Path(tmp))
    scale([int(n) for n in args.scale.split(",") if n], args.eval_rows)


if __name__ == "__main__":
    main()
