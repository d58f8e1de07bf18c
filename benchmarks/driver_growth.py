"""What the inspect-data driver keeps per row: findings per row, bytes per finding as the driver holds them, and the
largest live allocations (tracemalloc) once the report is built.

    python benchmarks/driver_growth.py [--rows 3000] [--tokenizer fixtures/tokenizers/qwen2.5-instruct]

Runs build_report in process (one worker) on tests/support.py's generated chat shards (the rows bench_ray.py uses),
then collects garbage and prints: the findings by check, the bytes one finding costs once unpickled (as the driver
holds the results of forked workers and Ray actors), its JSON size, and the top allocation sites still alive. The
driver's growth per row is about findings/row x bytes/finding. Not part of the test run.
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
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--top", type=int, default=8)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    from mldebug_cli.formats.json_format import report_document
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from support import write_chat_shards

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_chat_shards(Path(tmp) / "rows", args.rows, max(1, args.rows // 10_000))
        tracemalloc.start()
        report = build_report(InspectOptions(dataset=str(folder), tokenizer=args.tokenizer, all_rows=True,
                                             max_length=512, workers=1))
        gc.collect()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
    findings = len(report.findings)
    print(f"rows {report.summary['rows_checked']:,}  findings {findings:,} ({findings / args.rows:.3f} a row)  "
          f"by check {report.summary['by_check']}")
    if findings:
        tracemalloc.start()
        held = pickle.loads(pickle.dumps(report.findings))
        per_finding = tracemalloc.get_traced_memory()[0] / len(held)
        tracemalloc.stop()
        as_json = len(json.dumps(report_document(report)["findings"])) / findings
        print(f"one finding as the driver holds it: {per_finding:,.0f} B; in the JSON report: {as_json:,.0f} B; "
              f"findings alone: {findings / args.rows * per_finding:,.0f} B a row")
    print("largest live allocation sites after the report:")
    for stat in snapshot.statistics("lineno")[: args.top]:
        print(f"  {stat.size / 2**20:8.2f} MiB {stat.count:9,} objects  {stat.traceback[0]}")


if __name__ == "__main__":
    main()
