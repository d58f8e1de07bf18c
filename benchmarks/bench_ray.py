"""Benchmark: inspect-data --all in process against --engine ray, rows/s and driver peak RSS.

    python benchmarks/bench_ray.py [--sizes 10000 100000] [--repeat 3] [--tokenizer fixtures/tokenizers/qwen2.5-instruct]
                                   [--modes local-1 ray-1] [--all-findings]

Generates deterministic chat datasets (tests/support.py ``write_chat_shards``: Parquet shards of 10,000 rows, row
groups of 1,000, planted defects) once per size, then runs, interleaved ``--repeat`` times and each in its own
process (so its peak RSS is its own):
  local-2   the in-process path as a user runs it on this machine (2 forked workers)
  ray-2     --engine ray on a local Ray cluster of 2 CPUs (2 actors)
  local-1   the in-process path with 1 worker
  ray-1     --engine ray on a local Ray cluster of 1 CPU (1 actor)
The time is that of build_report (the report itself, actors started inside it; starting the local cluster, which a
real cluster has done already, is not counted). Prints the median rows/s with its range, the driver's peak RSS,
ray/local throughput and the Ray path's overhead per row. Every Ray report is checked equal to the in-process one.
Each run's result (with its report's sha256, the engine line left out) is also appended to ``results.jsonl`` beside
the datasets, so a long run that is stopped still leaves what it measured.
The report keeps the first KEPT_PER_CHECK findings of each check and counts the rest (the driver stays flat in rows);
``--all-findings`` keeps every one, as before, to see what the findings alone cost the driver.
Not part of the test run. On a shared machine timings vary by 10-30% from run to run: read the medians.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("local-2", "ray-2", "local-1", "ray-1")
RESULT = "RESULT "  # Ray may print its own lines on the child's stdout as it exits


def one(mode: str, dataset: str, tokenizer: str, all_findings: bool = False) -> dict:
    """One measured run in this process (the child side)."""
    sys.path.insert(0, str(ROOT))
    from mldebug_cli.formats.json_format import report_document
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    engine, cpus = mode.split("-")
    options = InspectOptions(dataset=dataset, tokenizer=tokenizer, all_rows=True, max_length=512)
    if all_findings:
        options = InspectOptions(**{**options.__dict__, "findings_kept": None})
    if engine == "ray":
        import ray

        from mldebug_cli.pipelines.ray_engine import local_priority

        local_priority()
        ray.init(num_cpus=int(cpus), include_dashboard=False, log_to_driver=False, logging_level="error")
        options = InspectOptions(**{**options.__dict__, "engine": "ray", "ray_concurrency": int(cpus)})
    else:
        options = InspectOptions(**{**options.__dict__, "workers": int(cpus)})
    start = time.perf_counter()
    doc = report_document(build_report(options))
    seconds = time.perf_counter() - start
    doc["context"].pop("engine", None)
    doc["context"].pop("workers", None)
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": seconds, "rows": doc["summary"]["rows_checked"],
            "cpu_s": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,  # the process, all of it
            "run_cpu_s": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + _descendants_cpu_s(),
            "rss_mib": _peak_rss_mib(),
            "report": hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()}


def _descendants_cpu_s() -> float:
    """CPU seconds of the processes still running under this one: on Ray, the local cluster (its workers and actors,
    raylet, GCS), which RUSAGE_CHILDREN does not count until they exit; the in-process workers have exited already."""
    import psutil

    total = 0.0
    for process in psutil.Process().children(recursive=True):
        try:
            times = process.cpu_times()
        except psutil.Error:  # exited meanwhile
            continue
        total += times.user + times.system
    return total


def _peak_rss_mib() -> float:
    """This process's peak RSS since its exec (VmHWM; ru_maxrss keeps the forking parent's peak across exec)."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(mode: str, dataset: Path, tokenizer: str, all_findings: bool = False) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", mode, "--dataset", str(dataset), "--tokenizer", tokenizer,
                          *(["--all-findings"] if all_findings else [])], capture_output=True, text=True, check=True)
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith(RESULT))[len(RESULT):])


def small_chat(i: int) -> dict:
    """Row ``i`` of a dataset of small two-turn chats (a few words each way) with tests/support.py's planted defects:
    a null reply every 97th row, special-token text in a reply every 89th, an empty reply every 83rd."""
    words = " ".join(_WORDS[(i * 7 + j * 3) % len(_WORDS)] for j in range(2 + i % 5))
    reply = " ".join(_WORDS[(i * 11 + j * 5) % len(_WORDS)] for j in range(1 + i % 7))
    if i % 89 == 0:
        reply += " <|im_end|> and more"
    if i % 83 == 0:
        reply = ""
    messages: list[dict] = [{"role": "user", "content": words}, {"role": "assistant", "content": reply}]
    if i % 97 == 0:
        messages[1] = {"role": "assistant", "content": None}
    return {"messages": messages}


_WORDS = ("the", "model", "learns", "a", "reply", "to", "each", "question", "in", "turn", "and", "stops", "when",
          "done", "data", "rows", "check", "token", "label", "mask")
SMALL_SHARD_ROWS = 100_000  # rows per Parquet shard of the small datasets
SMALL_ROW_GROUP = 10_000  # rows per row group: a chunk, what one Ray read task reads


def write_small_shards(folder: Path, rows: int) -> Path:
    """``rows`` small_chat rows as Parquet shards under ``folder``, written once (a ``.complete`` file marks a
    finished dataset, beside the folder; later runs reuse it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = folder.parent / f"{folder.name}.complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for s, first in enumerate(range(0, rows, SMALL_SHARD_ROWS)):
        table = pa.Table.from_pylist([small_chat(i) for i in range(first, min(rows, first + SMALL_SHARD_ROWS))])
        pq.write_table(table, folder / f"part-{s:05d}.parquet", row_group_size=SMALL_ROW_GROUP)
    done.write_text(f"{rows}\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--all-findings", action="store_true")
    parser.add_argument("--small", action="store_true", help="small two-turn rows (the count is the point), see small_chat")
    parser.add_argument("--data", help="keep the generated datasets here (made once, reused by later runs)")
    parser.add_argument("--one")
    parser.add_argument("--dataset")
    args = parser.parse_args()
    if args.one:
        result = one(args.one, args.dataset, args.tokenizer, args.all_findings)
        print(RESULT + json.dumps(result), flush=True)
        with (Path(args.dataset).parent / "results.jsonl").open("a", encoding="utf-8") as log:  # beside the datasets
            log.write(json.dumps({"mode": args.one, "dataset": args.dataset, **result}) + "\n")
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from support import write_chat_shards

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(args.data) if args.data else Path(tmp)
        datasets = {n: (write_small_shards(base / f"small-{n}", n) if args.small
                        else write_chat_shards(base / str(n), n, max(1, n // 10_000))) for n in args.sizes}
        results: dict[tuple[int, str], list[dict]] = {}
        for round_ in range(args.repeat):
            for n in args.sizes:
                for mode in args.modes:
                    result = run(mode, datasets[n], args.tokenizer, args.all_findings)
                    results.setdefault((n, mode), []).append(result)
                    print(f"round {round_ + 1} {n:>8} rows {mode:8} {result['seconds']:7.1f} s "
                          f"{result['rows'] / result['seconds']:7.0f} rows/s  driver RSS {result['rss_mib']:5.0f} MiB  "
                          f"{result['run_cpu_s']:7.1f} CPU s (this process and every process under it)",
                          file=sys.stderr, flush=True)
    print("| rows | mode | rows/s (median, range) | driver peak RSS MiB | vs local, same CPUs | Ray overhead per row | "
          "CPU ms a row, all processes | rows per CPU s vs local |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for n in args.sizes:
        for mode in args.modes:
            runs = results[(n, mode)]
            rates = [r["rows"] / r["seconds"] for r in runs]
            median = statistics.median(rates)
            base = results.get((n, "local-" + mode.split("-")[1]))
            ratio = overhead = per_cpu = ""
            cpu_ms = statistics.median(r["run_cpu_s"] / r["rows"] * 1e3 for r in runs)
            if mode.startswith("ray") and base:
                local_median = statistics.median(r["rows"] / r["seconds"] for r in base)
                ratio = f"{median / local_median:.2f}x"
                overhead = f"{(1 / median - 1 / local_median) * 1e3:+.3f} ms"
                per_cpu = f"{statistics.median(r['run_cpu_s'] / r['rows'] * 1e3 for r in base) / cpu_ms:.2f}x"
                assert {r["report"] for r in runs} == {r["report"] for r in base}, "the Ray report differs"
            print(f"| {n:,} | {mode} | {median:,.0f} ({min(rates):,.0f}-{max(rates):,.0f}) | "
                  f"{statistics.median(r['rss_mib'] for r in runs):,.0f} | {ratio} | {overhead} | {cpu_ms:.3f} | {per_cpu} |")


if __name__ == "__main__":
    main()
