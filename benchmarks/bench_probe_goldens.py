"""Benchmark: CPU seconds per probe golden (tools/probe_goldens.py make), one torch thread against torch's default.

    python benchmarks/bench_probe_goldens.py [--ids 35 36 37 38 39] [--threads 0 1] [--draw v2]

For each thread count (0: torch's default, one per core) it runs ``make`` on the same configs of the draw in a fresh
process (niced; the tiny models built once beforehand, outside the measure) and prints the process's CPU seconds
(user + system, from ``resource.getrusage``), its wall seconds and the CPU seconds per config. The first config of a
process also pays the imports and the tokenizers; ``make`` prints each config's own CPU seconds beside it.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "probe_goldens.py"


def run(ids: list[int], threads: int, draw: str, work: Path) -> tuple[float, float, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    if threads:
        env["PROBE_GOLDENS_THREADS"] = str(threads)
    else:
        env["PROBE_GOLDENS_THREADS"] = str(os.cpu_count() or 1)
    out = work / f"bench-{threads}.json.gz"
    out.unlink(missing_ok=True)
    args = [sys.executable, str(TOOL), "make", "--draw", draw, "--out", str(out), "--work", str(work),
            "--count", str(max(ids) + 1)] + [a for i in ids for a in ("--id", str(i))]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(["nice", "-n", "5", *args], env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, nargs="+", default=[35, 36, 37, 38, 39])
    parser.add_argument("--threads", type=int, nargs="+", default=[0, 1], help="0: torch's default (one per core)")
    parser.add_argument("--draw", default="v2")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench-probe-goldens")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    run(args.ids[:1], 1, args.draw, args.work)  # builds the tiny models once, outside the measure
    for threads in args.threads:
        cpu, wall, out = run(args.ids, threads, args.draw, args.work)
        print(f"threads {threads or f'default ({os.cpu_count()})'}: {len(args.ids)} configs, CPU {cpu:.1f} s "
              f"({cpu / len(args.ids):.1f} s per config, imports and tokenizers included), wall {wall:.0f} s")
        print("".join(f"    {line}\n" for line in out.splitlines()[:-1]), end="")


if __name__ == "__main__":
    main()
