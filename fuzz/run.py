"""Run the fuzz targets for a bounded time: ``python fuzz/run.py --seconds 100 [TARGET ...]``.

Each target runs in its own process for an equal share of the time, under atheris (libFuzzer, coverage-guided)
when it is installed, else under a plain mutation loop over the same seeds. New inputs go to a temporary
corpus, never into fixtures/. A failing input is written to ``--artifacts`` (default: a folder in the system's
temporary directory) and the run exits 1; an input running longer than ``--input-timeout`` seconds is a hang.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_SEED_BYTES = 64 * 1024
MEMORY_LIMIT_MB = 3072  # a target that needs more is leaking or amplifying input


def main() -> int:
    args = _arguments()
    if args.child:
        return _run_child(args)
    sys.path.insert(0, str(HERE))
    from targets import TARGETS

    names = args.targets or list(TARGETS)
    unknown = sorted(set(names) - set(TARGETS))
    if unknown:
        sys.exit(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    share = max(args.seconds / len(names), 1.0)
    failed = [name for name in names if not _run_in_child(name, share, args)]
    print(f"fuzz: {len(names) - len(failed)} of {len(names)} targets clean ({share:.0f} s each)")
    if failed:
        print(f"fuzz: failing inputs for {', '.join(failed)} are in {args.artifacts}/", file=sys.stderr)
    return 1 if failed else 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", help="targets to run (default: all)")
    parser.add_argument("--seconds", type=float, default=100.0, help="total time for all targets")
    parser.add_argument("--input-timeout", type=int, default=30, help="seconds one input may take")
    parser.add_argument("--artifacts", type=Path, default=Path(tempfile.gettempdir()) / "mldebug-fuzz-artifacts")
    parser.add_argument("--seed", type=int, default=None, help="random seed (libFuzzer's -seed, or the mutation loop's)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    return parser.parse_args()


def _run_in_child(name: str, seconds: float, args: argparse.Namespace) -> bool:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", name, "--seconds", str(seconds),
               "--input-timeout", str(args.input_timeout), "--artifacts", str(args.artifacts)]
    if args.seed is not None:
        command += ["--seed", str(args.seed)]
    with tempfile.TemporaryDirectory(prefix=f"mldebug-fuzz-{name}-") as scratch:  # the corpus and target files
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "TMPDIR": scratch}
        try:
            done = subprocess.run(command, env=env, timeout=seconds + args.input_timeout + 120)
        except subprocess.TimeoutExpired:
            print(f"fuzz: {name} did not stop in time", file=sys.stderr)
            return False
    print(f"fuzz: {name}: {'clean' if done.returncode == 0 else f'FAILED (exit {done.returncode})'}")
    return done.returncode == 0


def _run_child(args: argparse.Namespace) -> int:
    args.artifacts.mkdir(parents=True, exist_ok=True)
    corpus = Path(tempfile.mkdtemp(prefix="corpus-"))
    try:
        import atheris
    except ImportError:
        return _mutation_loop(args, corpus)
    with atheris.instrument_imports(include=["mldebug_cli"]):
        sys.path.insert(0, str(HERE))
        from targets import TARGETS
    target, seed_dirs = TARGETS[args.child]
    _copy_seeds(seed_dirs, corpus)
    atheris.Setup(
        [sys.argv[0], str(corpus), f"-max_total_time={int(args.seconds)}", f"-timeout={args.input_timeout}",
         f"-rss_limit_mb={MEMORY_LIMIT_MB}", f"-artifact_prefix={args.artifacts}/{args.child}-", "-print_final_stats=1",
         *([f"-seed={args.seed}"] if args.seed is not None else [])],
        target,
    )
    atheris.Fuzz()
    return 0


def _mutation_loop(args: argparse.Namespace, corpus: Path) -> int:
    """Without atheris: mutate the seeds at random until the time is up; the first failing input stops the run."""
    sys.path.insert(0, str(HERE))
    from targets import TARGETS

    target, seed_dirs = TARGETS[args.child]
    seeds = [p.read_bytes() for p in _copy_seeds(seed_dirs, corpus)] or [b""]
    rng = random.Random(args.seed)
    deadline, runs = time.monotonic() + args.seconds, 0
    current = args.artifacts / f"{args.child}-last-input"
    while time.monotonic() < deadline:
        data = seeds[runs] if runs < len(seeds) else _mutate(rng, rng.choice(seeds), rng.choice(seeds))
        faulthandler.dump_traceback_later(args.input_timeout, exit=True)  # a hang prints where and exits non-zero
        current.write_bytes(data)  # left behind if the input kills the process (an abort in a native library)
        try:
            target(data)
        except Exception:
            artifact = args.artifacts / f"{args.child}-crash-{runs}"
            artifact.write_bytes(data)
            traceback.print_exc()
            print(f"fuzz: {args.child}: input written to {artifact}", file=sys.stderr)
            return 1
        finally:
            faulthandler.cancel_dump_traceback_later()
        runs += 1
    current.unlink(missing_ok=True)
    print(f"fuzz: {args.child}: {runs} inputs (mutation loop; install atheris for coverage-guided fuzzing)")
    return 0


def _mutate(rng: random.Random, data: bytes, other: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randint(0, len(out))
        choice = rng.randrange(5)
        if choice == 0 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif choice == 1:
            del out[at:at + rng.randint(1, 16)]
        elif choice == 2:
            out[at:at] = rng.choice([b"{{", b"}}", b"{%", b"%}", b"[", b"]", b"{", b"}", b'"', b"\\", b"\n", b"\x00", b"\xff"])
        elif choice == 3 and other:
            start = rng.randrange(len(other))
            out[at:at] = other[start:start + rng.randint(1, 64)]
        else:
            out[at:at] = out[at:at + rng.randint(1, 32)] * rng.randint(1, 4)
    return bytes(out)


def _copy_seeds(seed_dirs, corpus: Path) -> list[Path]:
    copied = []
    for folder in seed_dirs:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.stat().st_size <= MAX_SEED_BYTES:
                copied.append(corpus / f"{len(copied):04d}-{path.name}")
                shutil.copyfile(path, copied[-1])
    return copied


if __name__ == "__main__":
    sys.exit(main())
