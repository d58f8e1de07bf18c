"""What the inspect-data driver keeps per row: findings per row, bytes per finding as the driver holds them, the
largest live allocations (tracemalloc) once the report is built, and what the driver's heap grew by between an early
point of the run and its end.

    python benchmarks/driver_growth.py [--rows 3000] [--workers 1] [--engine local|ray] [--small]
                                       [--dataset DIR] [--tokenizer fixtures/tokenizers/qwen2.5-instruct]

Runs build_report (in process with ``--workers`` forked workers, or on a local Ray cluster of ``--workers`` CPUs) on
tests/support.py's generated chat shards (the rows bench_ray.py uses; ``--small``: bench_ray.py's small rows;
``--dataset``: a folder made already), then collects garbage and prints: the findings by check, the bytes one finding
costs once unpickled (as the driver holds the results of forked workers and Ray actors), its JSON size, the top
allocation sites still alive, and the sites that grew most from a tenth of the rows to the end (the driver's own
heap, traced in the driver from its first batch result on, so that forked workers are not traced; with
``--workers 1`` the rows' work runs there too). A flat driver shows no site growing
with the rows. Not part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import sys
import tempfile
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--engine", choices=("local", "ray"), default="local")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--dataset")
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    from bench_ray import write_small_shards

    from mldebug_cli.formats.json_format import report_document
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from support import write_chat_shards

    with tempfile.TemporaryDirectory() as tmp:
        if args.dataset:
            folder = Path(args.dataset)
        elif args.small:
            folder = write_small_shards(Path(tmp) / "rows", args.rows)
        else:
            folder = write_chat_shards(Path(tmp) / "rows", args.rows, max(1, args.rows // 10_000))
        options = InspectOptions(dataset=str(folder), tokenizer=args.tokenizer, all_rows=True, max_length=512,
                                 workers=args.workers)
        if args.engine == "ray":
            import ray

            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False, logging_level="error")
            options = InspectOptions(**{**options.__dict__, "engine": "ray", "ray_concurrency": args.workers})
        early: list[tracemalloc.Snapshot] = []

        def progress(done: int, total: int) -> None:
            if args.workers > 1 and not tracemalloc.is_tracing():
                tracemalloc.start()  # after the first batch: the workers are forked, and only the driver is traced
            if not early and done >= total // 10:
                gc.collect()
                early.append(tracemalloc.take_snapshot())

        if args.workers <= 1:
            tracemalloc.start()
        report = build_report(options, progress)
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
    findings = len(report.findings)
    rows = report.summary["rows_checked"]
    print(f"rows {rows:,}  findings kept {findings:,} ({findings / rows:.3f} a row)  by check {report.summary['by_check']}")
    if findings:
        tracemalloc.start()
        held = pickle.loads(pickle.dumps(report.findings))
        per_finding = tracemalloc.get_traced_memory()[0] / len(held)
        tracemalloc.stop()
        as_json = len(json.dumps(report_document(report)["findings"])) / findings
        print(f"one finding as the driver holds it: {per_finding:,.0f} B; in the JSON report: {as_json:,.0f} B")
    print("largest live allocation sites after the report:")
    for stat in snapshot.statistics("lineno")[: args.top]:
        print(f"  {stat.size / 2**20:8.2f} MiB {stat.count:9,} objects  {stat.traceback[0]}")
    if early:
        grown = snapshot.compare_to(early[0], "lineno")
        total = sum(s.size_diff for s in grown)
        print(f"the driver's heap from a tenth of the rows to the end: {total / 2**20:+.2f} MiB "
              f"({total / (rows * 0.9):+.1f} B a row); the sites that grew most:")
        for stat in grown[: args.top]:
            print(f"  {stat.size_diff / 2**20:+8.2f} MiB {stat.count_diff:+9,} objects  {stat.traceback[0]}")


if __name__ == "__main__":
    main()
