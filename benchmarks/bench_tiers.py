"""Benchmark: the CPU seconds each test tier costs, summed from a junit file (not part of the test run).

    python benchmarks/bench_tiers.py run.xml [more.xml or CPU_COST_LOG files ...] [--top 25]
    python benchmarks/bench_tiers.py --run fast [--workers 2] [--top 25]     # runs the tier, then reports it

A junit file made with ``benchmarks/cpu_cost.py`` loaded (``PYTHONPATH=benchmarks python -m pytest -p cpu_cost
-o junit_family=xunit1 --junitxml=run.xml ...``; ``--run`` does this) holds each test's CPU time (its process and
waited-for children, set-up to tear-down) and its tier; a plain junit file has only wall times, which this sums
instead and says so. On a machine shared with other work a test's wall time is mostly waiting for a core, so the
CPU sum is the figure to compare between runs; the wall time of the whole run divided by the cores is its floor on
a quiet machine, plus each xdist worker's start-up and collection, which ``--run`` also measures (``--collect-only
-n 0``). Prints per tier: tests, CPU seconds, the costliest modules and tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIER_MARKS = {"fast": "not slow", "slow": "slow", "all": "slow or not slow"}


@dataclass(frozen=True)
class Case:
    module: str
    name: str
    tier: str
    seconds: float
    cpu: bool  # seconds is CPU time (else the junit wall time)
    outcome: str


def read_log(path: Path) -> list[Case]:
    """A ``CPU_COST_LOG`` file: one ``cpu_s<TAB>wall_s<TAB>tier<TAB>nodeid`` line per test that ended (wall_s is
    absent in the first version's lines)."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t", 3)
        cpu, tier, nodeid = (fields[0], fields[2], fields[3]) if fields[1].replace(".", "", 1).isdigit() else fields
        module, _, name = nodeid.partition("::")
        cases.append(Case(module, name, tier, float(cpu), True, "ended"))
    return cases


def read_junit(path: Path, default_tier: str) -> list[Case]:
    if not path.read_bytes().lstrip().startswith(b"<"):
        return read_log(path)
    cases = []
    for case in ET.parse(path).iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        outcome = next((child.tag for child in case if child.tag in ("skipped", "failure", "error")), "passed")
        module = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        seconds = float(props["cpu_s"]) if "cpu_s" in props else float(case.get("time") or 0)
        cases.append(Case(module, case.get("name", ""), props.get("tier", default_tier), seconds, "cpu_s" in props,
                          outcome))
    return cases


def report(cases: list[Case], top: int) -> None:
    tiers: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        tiers[case.tier].append(case)
    for tier, group in sorted(tiers.items()):
        total = sum(c.seconds for c in group)
        kind = "CPU" if all(c.cpu for c in group) else "wall (no cpu_s property: a junit file without cpu_cost)"
        outcomes = defaultdict(int)
        for c in group:
            outcomes[c.outcome] += 1
        print(f"== {tier} tier: {len(group)} tests ({', '.join(f'{n} {o}' for o, n in sorted(outcomes.items()))}), "
              f"{total:.1f} {kind} s, mean {total / max(len(group), 1):.3f} s")
        modules: dict[str, list[float]] = defaultdict(list)
        for c in group:
            modules[c.module].append(c.seconds)
        print(f"   costliest modules ({len(modules)} in all):")
        for module, times in sorted(modules.items(), key=lambda kv: -sum(kv[1]))[:top]:
            print(f"   {sum(times):8.1f} s {len(times):5d} tests  {module}")
        print("   costliest tests:")
        for c in sorted(group, key=lambda c: -c.seconds)[:top]:
            print(f"   {c.seconds:8.1f} s  {c.module}::{c.name}")


def makespan(costs: list[list[float]], workers: int) -> float:
    """The wall seconds ``workers`` quiet cores need for these units of work handed out in order, each to the first
    worker free (xdist's scheduling, with no start-up): the units are modules under ``--dist loadscope``, tests
    under ``--dist worksteal`` (which also splits a module between workers)."""
    free = [0.0] * workers
    for unit in costs:
        at = free.index(min(free))
        free[at] += sum(unit)
    return max(free)


def schedules(cases: list[Case], workers: int) -> None:
    """What the fast tier's test CPU time comes to in wall time on ``workers`` quiet cores, module by module
    (loadscope) and test by test (worksteal), in collection order (modules sorted by path, as pytest collects)."""
    modules: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        modules[case.module].append(case.seconds)
    ordered = [modules[m] for m in sorted(modules)]
    loadscope = makespan(ordered, workers)
    worksteal = makespan([[t] for unit in ordered for t in unit], workers)
    total = sum(map(sum, ordered))
    print(f"== on {workers} quiet cores the tests' {total:.0f} CPU s take at least {total / workers:.0f} s: "
          f"{loadscope:.0f} s scheduled module by module (--dist loadscope), {worksteal:.0f} s test by test "
          f"(--dist worksteal); add each worker's start-up and collection")


def run_tier(tier: str, workers: int, out: Path) -> float:
    """Runs the tier with the CPU plugin into ``out``; returns the collection's CPU seconds in one process."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), str(ROOT / "benchmarks"),
                                                                      os.environ.get("PYTHONPATH")]))}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only", "-n", "0", "-m", TIER_MARKS[tier]],
                   cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    collect = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", TIER_MARKS[tier], "-n", str(workers), "-p",
                    "cpu_cost", "-o", "junit_family=xunit1", f"--junitxml={out}"], cwd=ROOT, env=env, check=False)
    print(f"== ran the {tier} tier on {workers} workers: {time.perf_counter() - start:.0f} s wall, "
          f"load average {os.getloadavg()[0]:.1f} at the end; collection alone {collect:.1f} CPU s per worker")
    return collect


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", nargs="*", type=Path)
    parser.add_argument("--run", choices=sorted(TIER_MARKS), help="run this tier first (with the CPU plugin)")
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--cores", type=int, default=2, help="the quiet cores the schedule estimate assumes")
    args = parser.parse_args()
    files = list(args.junit)
    if args.run:
        out = Path(tempfile.mkdtemp()) / f"{args.run}.xml"
        run_tier(args.run, args.workers, out)
        files.append(out)
    if not files:
        parser.error("give a junit file or --run TIER")
    cases = [case for path in files for case in read_junit(path, args.run or "fast")]
    report(cases, args.top)
    schedules([case for case in cases if case.tier == "fast"], args.cores)


if __name__ == "__main__":
    main()
