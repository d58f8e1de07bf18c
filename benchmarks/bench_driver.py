"""Benchmark: the inspect-data driver's memory from 10^5 to 10^7 rows, with the report's cap on findings and without.

    python benchmarks/bench_driver.py [--sizes 100000 1000000 10000000] [--tokenizer fixtures/tokenizers/qwen2.5-instruct]

The rows' work (render, tokenize, checks) runs in workers or Ray actors and is the same for every batch; what grows
with the dataset, if anything, is what the driver keeps of each batch's result. So this runs the real pipeline once
on 1,000 generated rows (tests/support.py ``write_chat_shards``: the rows bench_ray.py uses, with their planted
defects) and keeps that batch's findings, then, in a fresh process per size and mode, replays them as the results of
``size / 1,000`` batches (their rows moved to each batch's place) through the driver's reduction
(core.findings.FindingKeeper, as pipelines/inspect.build_report reduces every batch), and prints the process's peak RSS
and what the reduction kept. ``capped`` is the report as mldebug writes it (the first KEPT_PER_CHECK findings of each
check, the rest counted), ``all`` is ``--all-findings``. Not part of the test run; bench_ray.py measures whole runs.
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BATCH = 1000
RESULT = "RESULT "


def one(batch_file: str, rows: int, capped: bool) -> dict:
    sys.path.insert(0, str(ROOT))
    from mldebug_cli.core.findings import KEPT_PER_CHECK, FindingKeeper

    batch = pickle.loads(Path(batch_file).read_bytes())
    start = time.perf_counter()
    keeper = FindingKeeper(KEPT_PER_CHECK if capped else None)
    for offset in range(0, rows, BATCH):
        keeper.extend(replace(f, location=replace(f.location, row=f.location.row + offset))
                      if f.location.row is not None else f for f in batch)
    return {"rows": rows, "mode": "capped" if capped else "all", "seconds": time.perf_counter() - start,
            "kept": len(keeper.kept), "counted": sum(keeper.by_code.values()),
            "rss_mib": _peak_rss_mib()}


def _peak_rss_mib() -> float:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss keeps the forking parent's peak across exec)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--all-up-to", type=int, default=1_000_000, help="run 'all' (every finding kept) up to this size")
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--one", nargs=3)
    args = parser.parse_args()
    if args.one:
        print(RESULT + json.dumps(one(args.one[0], int(args.one[1]), args.one[2] == "capped")), flush=True)
        return
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from support import write_chat_shards

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_chat_shards(Path(tmp) / "rows", BATCH, 1)
        report = build_report(InspectOptions(dataset=str(folder), tokenizer=args.tokenizer, all_rows=True,
                                             max_length=512, workers=1, findings_kept=None))
        batch_file = Path(tmp) / "batch.pickle"
        batch_file.write_bytes(pickle.dumps(report.findings))
        print(f"one batch of {BATCH:,} rows: {len(report.findings):,} findings {report.summary['by_check']}",
              file=sys.stderr, flush=True)
        print("| rows | findings | report | kept in full | driver peak RSS MiB | reduction s |")
        print("|---:|---:|---|---:|---:|---:|")
        for rows in args.sizes:
            for mode in ("capped", "all"):
                if mode == "all" and rows > args.all_up_to:
                    continue
                out = subprocess.run([sys.executable, __file__, "--one", str(batch_file), str(rows), mode],
                                     capture_output=True, text=True, check=True)
                r = json.loads(next(line for line in out.stdout.splitlines() if line.startswith(RESULT))[len(RESULT):])
                print(f"| {rows:,} | {r['counted']:,} | {mode} | {r['kept']:,} | {r['rss_mib']:,.0f} | {r['seconds']:.1f} |",
                      flush=True)


if __name__ == "__main__":
    main()
