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

    python benchmarks/bench_driver.py --whole [--sizes 100000 1000000 10000000] [--modes local-2 ray-2] [--data DIR]

``--whole`` runs the driver's whole path, as ``inspect-data --all`` runs it, on bench_ray.py's small rows (Parquet
shards made once under ``--data``): build_report opens the shards, reads them (in process: here, the batches sent to
2 forked workers; on Ray: Ray Data's read tasks and actors, the results back through Ray Data's iterator), reduces
every batch's result and writes the report. Only the rows' work in the workers is replaced (tests/support.py
``replay_rows``): row ``i`` gets the real engine's result of row ``i % 256`` of the dataset (its findings, statistics
and view, moved to row ``i``), so the report is the same in process and on Ray and what grows with the rows is
what the driver keeps, at 10^7 rows in a fraction of the 1.4 CPU-hours the real row work takes (bench_ray.py measures
that). Prints the driver's peak RSS (VmHWM), its private RSS at the end (RssAnon: the high-water mark is not split),
the driver's CPU seconds, the whole run's (the process from its start, its forked workers, on Ray the local
cluster's processes: what Ray's machinery costs beside the in-process path) and the report's sha256 (the engine line left out; in process and on Ray alike).
Each run also writes the driver's memory every 100,000 rows to ``rss-trace-MODE-DATASET.jsonl`` beside the datasets
(RSS, peak, private RSS, the Python heap's live blocks): where a driver grows, and whether in Python's heap or not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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
TRACE_EVERY = 100_000  # --whole: rows between two lines of the driver's memory trace


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


def whole_one(mode: str, dataset: str, template_file: str, tokenizer: str) -> dict:
    """One run of the driver's whole path (the child side): build_report with the rows' work replayed."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]
    from mldebug_cli.formats.json_format import report_document
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from support import replay_rows

    replay_rows(template_file)
    engine, cpus = mode.split("-")
    options = InspectOptions(dataset=dataset, tokenizer=tokenizer, all_rows=True, max_length=512, workers=int(cpus))
    if engine == "ray":
        import ray

        from mldebug_cli.pipelines.ray_engine import local_priority

        def replaying() -> None:  # Ray's setup hook: a named function (it exports the hook by name)
            replay_rows(template_file)

        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])  # support
        local_priority()
        ray.init(num_cpus=int(cpus), include_dashboard=False, log_to_driver=False, logging_level="error",
                 runtime_env={"worker_process_setup_hook": replaying})
        options = InspectOptions(**{**options.__dict__, "engine": "ray", "ray_concurrency": int(cpus), "workers": None})
    trace = Path(dataset).parent / f"rss-trace-{mode}-{Path(dataset).name}.jsonl"
    trace.unlink(missing_ok=True)
    start, cpu = time.perf_counter(), time.process_time()
    doc = report_document(build_report(options, _tracer(trace)))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    doc["context"].pop("engine", None)
    doc["context"].pop("workers", None)
    from bench_ray import _descendants_cpu_s

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    run_cpu = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime + _descendants_cpu_s()
    return {"mode": mode, "rows": doc["summary"]["rows_checked"], "seconds": seconds, "driver_cpu_s": cpu,
            "run_cpu_s": run_cpu,  # the whole run: this process from its start, its workers, Ray's cluster
            "rss_mib": _peak_rss_mib(), "private_mib": _private_rss_mib(),
            "report": hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()}


def _tracer(trace: Path):
    """A progress callback that appends the driver's memory every TRACE_EVERY rows to ``trace`` (JSON Lines): its
    RSS, peak and private RSS, and the Python heap's live blocks (sys.getallocatedblocks: flat blocks under a
    growing private RSS is memory outside Python's heap, Ray's or Arrow's)."""
    next_at = [0]

    def progress(done: int, total: int) -> None:
        if done < next_at[0] and done < total:
            return
        next_at[0] = done + TRACE_EVERY
        memory = {line.split(":")[0]: int(line.split()[1]) // 1024 for line in Path("/proc/self/status").read_text().splitlines()
                  if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:"))}
        with trace.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"rows": done, "t": round(time.perf_counter(), 1), **memory,
                                  "py_blocks": sys.getallocatedblocks()}) + "\n")

    return progress


def _private_rss_mib() -> float:
    """This process's private resident memory now (RssAnon: not the shared libraries, not Ray's shared memory)."""
    status = Path("/proc/self/status")
    for line in status.read_text().splitlines() if status.exists() else ():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024
    return 0.0


def whole(sizes: list[int], modes: list[str], tokenizer: str, data: str | None) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks"), str(ROOT / "tests")]
    from bench_ray import write_small_shards

    from support import first_rows_results

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(data) if data else Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        template = first_rows_results(write_small_shards(base / f"small-{min(sizes)}", min(sizes)), Path(tokenizer),
                                      base / "first-rows-results.pickle")
        print("| rows | run | driver peak RSS MiB | private RSS at the end MiB | driver CPU s | run CPU s | wall s | "
              "report sha256 |")
        print("|---:|---|---:|---:|---:|---:|---:|---|")
        for n in sizes:
            dataset = write_small_shards(base / f"small-{n}", n)  # each size made when its turn comes
            for mode in modes:
                out = subprocess.run([sys.executable, __file__, "--whole-one", mode, str(dataset), str(template),
                                      "--tokenizer", tokenizer], capture_output=True, text=True)
                line = next((x for x in out.stdout.splitlines() if x.startswith(RESULT)), None)
                if line is None:
                    print(f"| {n:,} | {mode} | failed: {out.stderr.strip().splitlines()[-1:]} |", flush=True)
                    continue
                r = json.loads(line[len(RESULT):])
                assert r["rows"] == n, r
                print(f"| {n:,} | {mode} | {r['rss_mib']:,.0f} | {r['private_mib']:,.0f} | {r['driver_cpu_s']:.1f} | "
                      f"{r['run_cpu_s']:.1f} | {r['seconds']:.0f} | {r['report'][:12]} |", flush=True)
                with (base / "driver-results.jsonl").open("a", encoding="utf-8") as log:
                    log.write(json.dumps({"dataset": str(dataset), **r}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument("--all-up-to", type=int, default=1_000_000, help="run 'all' (every finding kept) up to this size")
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--one", nargs=3)
    parser.add_argument("--whole", action="store_true", help="the driver's whole path, the rows' work replayed (above)")
    parser.add_argument("--modes", nargs="+", default=["local-2", "ray-2"])
    parser.add_argument("--data", help="--whole: keep the generated datasets here (made once, reused by later runs)")
    parser.add_argument("--whole-one", nargs=3)
    args = parser.parse_args()
    if args.whole_one:
        print(RESULT + json.dumps(whole_one(*args.whole_one, args.tokenizer)), flush=True)
        return
    if args.whole:
        whole(args.sizes, args.modes, args.tokenizer, args.data)
        return
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
