"""Benchmark: how long ``mldebug --help`` and each command's ``--help`` take, start to exit.

    python benchmarks/bench_help.py [--repeat 15]

Runs the installed console script (the ``mldebug`` file beside this Python, as pip writes it; a shim that
starts Python through a version manager such as pyenv adds its own time, which this leaves out) in a fresh
process each time, and prints the median and the slowest wall time, and the median CPU time (user + system) of
the process, per command. The target (issue 22) is under 0.3 s for ``mldebug --help``. Also prints which heavy
libraries a ``--help`` run imported (none should be). Not part of the test run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("torch", "transformers", "datasets", "peft", "ray", "matplotlib", "jinja2", "tokenizers")
COMMANDS = ((), ("inspect-data",), ("preflight",), ("check-template",), ("render",), ("lr-plot",), ("check-run",),
            ("explain",), ("probe",), ("memory",))


def script() -> list[str]:
    found = Path(sys.executable).with_name("mldebug")
    if found.is_file():
        return [sys.executable, str(found)]
    return [sys.executable, "-c", "import sys; from mldebug_cli.cli import main; sys.argv[0] = 'mldebug'; main()"]


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "COLUMNS": "100"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports(argv: list[str]) -> list[str]:
    probe = ("import runpy, sys; sys.argv = ['mldebug', *sys.argv[1:]]\n"
             "try:\n from mldebug_cli.cli import main; main()\nexcept SystemExit: pass\n"
             f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, check=False)
    return eval(done.stderr.strip().splitlines()[-1])  # noqa: S307 - our own printed list


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    base = script()
    timed([*base, "--help"])  # a warm page cache for every run
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; {' '.join(Path(p).name for p in base[:2])}")
    print(f"{'command':<28} {'median s':>9} {'slowest s':>10} {'CPU s':>7}  heavy imports")
    for command in COMMANDS:
        argv = [*command, "--help"]
        runs = [timed([*base, *argv]) for _ in range(args.repeat)]
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        heavy = heavy_imports(argv)
        print(f"{'mldebug ' + ' '.join(argv):<28} {statistics.median(walls):>9.3f} {max(walls):>10.3f} "
              f"{statistics.median(cpus):>7.3f}  {', '.join(heavy) or 'none'}")


if __name__ == "__main__":
    main()
