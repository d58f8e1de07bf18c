"""Benchmark: `mldebug check-run` on million-step logs, wall time and peak RSS of the process.

    python benchmarks/bench_check_run.py [--steps 1000000] [--keep-built DIR] [--only NAME ...]

Builds, in a temporary folder, a LLaMA-Factory ``trainer_log.jsonl``, an HF ``trainer_state.json``, a
console log (transformers 5 dicts of strings), a torchtune ``log_<time>.txt``, an MLflow file store and an
``mlflow.db`` (MLflow's ``metrics``/``runs``/``params`` columns) of ``--steps`` logged steps each (loss,
grad_norm, learning_rate; one planted loss spike), then runs ``mldebug check-run FILE -f json`` on each in a
child process and reports its wall time and peak resident memory (the child's own ``ru_maxrss``) next
to the file size and the findings. Also runs ``--help`` for the process's base RSS. Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def values(step: int) -> tuple[float, float, float]:
    loss = 2.0 / (1 + step / 1e5) + (5.0 if step == 700_000 else 0.0)
    return loss, 0.5 + (step % 7) / 10, 1e-5


def build_jsonl(path: Path, steps: int) -> None:
    with path.open("w") as stream:
        for s in range(1, steps + 1):
            loss, grad, lr = values(s)
            stream.write(f'{{"current_steps": {s}, "total_steps": {steps}, "loss": {loss:.5f}, "lr": {lr}}}\n')


def build_trainer_state(path: Path, steps: int) -> None:
    with path.open("w") as stream:
        stream.write(f'{{"global_step": {steps}, "max_steps": {steps}, "logging_steps": 1, "log_history": [\n')
        for s in range(1, steps + 1):
            loss, grad, lr = values(s)
            sep = ",\n" if s < steps else "\n"
            stream.write(f'  {{\n   "grad_norm": {grad},\n   "learning_rate": {lr},\n   "loss": {loss:.5f},\n'
                         f'   "step": {s}\n  }}{sep}')
        stream.write("]}\n")


def build_console(path: Path, steps: int) -> None:
    with path.open("w") as stream:
        for s in range(1, steps + 1):
            loss, grad, lr = values(s)
            stream.write(f"{{'loss': '{loss:.4g}', 'grad_norm': '{grad:.4g}', 'learning_rate': '{lr:.4g}', "
                         f"'epoch': '{s / steps:.4g}'}}\n")


def build_torchtune(path: Path, steps: int) -> None:
    with path.open("w") as stream:
        for s in range(1, steps + 1):
            loss, grad, lr = values(s)
            stream.write(f"Step {s} | loss:{loss} lr:{lr} tokens_per_second_per_gpu:1234.5 grad_norm:{grad} \n")


def build_mlruns(path: Path, steps: int) -> None:
    run = path / "1" / "0123456789abcdef"
    (run / "metrics").mkdir(parents=True)
    (run / "params").mkdir()
    (path / "1" / "meta.yaml").write_text("experiment_id: '1'\nname: bench\n")
    (run / "meta.yaml").write_text("run_id: 0123456789abcdef\nrun_name: bench\nstart_time: 1\nstatus: 3\n")
    (run / "params" / "max_steps").write_text(str(steps))
    for index, key in enumerate(("loss", "grad_norm", "learning_rate")):
        with (run / "metrics" / key).open("w") as stream:
            for s in range(1, steps + 1):
                stream.write(f"{1700000000000 + s} {values(s)[index]} {s}\n")


def build_mlflow_db(path: Path, steps: int) -> None:
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (run_uuid TEXT, name TEXT, status TEXT, start_time INTEGER, "
                   "lifecycle_stage TEXT)")
        db.execute("CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT)")
        db.execute("CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, run_uuid TEXT, step INTEGER, "
                   "is_nan INTEGER)")
        db.execute("INSERT INTO runs VALUES ('r0', 'bench', 'FINISHED', 1, 'active')")
        for index, key in enumerate(("loss", "grad_norm", "learning_rate")):
            db.executemany("INSERT INTO metrics VALUES (?, ?, ?, 'r0', ?, 0)",
                           ((key, values(s)[index], s, s) for s in range(1, steps + 1)))


BUILDERS = {"trainer_log.jsonl": build_jsonl, "console.log": build_console, "trainer_state.json": build_trainer_state,
            "log_1700000000.txt": build_torchtune, "mlruns": build_mlruns, "mlflow.db": build_mlflow_db}

# The child reports its own peak RSS (ru_maxrss of RUSAGE_CHILDREN would be the largest child so far).
CHILD = """
import resource, sys
from mldebug_cli.cli import main
try:
    main()
finally:
    sys.stderr.write(f"\\nMAXRSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n")
"""


def measure(args: list[str]) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, stdout) of one child process running ``mldebug ARGS``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode == 2:
        raise SystemExit(f"check-run failed: {done.stderr.strip()}")
    peak_kib = int(done.stderr.rsplit("MAXRSS ", 1)[1].split()[0])
    return seconds, peak_kib / 1024, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--keep-built", type=Path, help="Write the logs here instead of a temporary folder.")
    parser.add_argument("--only", nargs="*", choices=sorted(BUILDERS), help="Only these logs.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = options.keep_built or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        seconds, rss, _ = measure(["check-run", "--help"])
        print(f"{'--help':<22} {seconds:7.2f} s  {rss:7.1f} MiB peak RSS")
        for name, build in BUILDERS.items():
            if options.only and name not in options.only:
                continue
            path = folder / name
            if not path.exists():
                build(path, options.steps)
            seconds, rss, out = measure(["check-run", str(path), "-f", "json"])
            doc = json.loads(out)
            codes = sorted({f["code"] for f in doc["findings"]})
            size = sum(p.stat().st_size for p in (path.rglob("*") if path.is_dir() else [path]) if p.is_file()) / 2**20
            print(f"{name:<22} {seconds:7.2f} s  {rss:7.1f} MiB peak RSS  ({options.steps} steps, {size:.0f} MiB; "
                  f"findings {', '.join(codes) or 'none'})")


if __name__ == "__main__":
    main()
