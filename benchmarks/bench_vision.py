"""Benchmark: `mldebug inspect-data --all` on TRL vision SFT rows, wall time and peak RSS of the process.

    python benchmarks/bench_vision.py [--rows 2000] [--images 200] [--side 640]

Writes, in a temporary folder, ``--images`` PNGs of about ``--side`` pixels a side (random aspect ratios, noise so
they do not compress to nothing) and ``--rows`` rows naming one or two of them each (so images repeat across rows, as
in real sets), then runs ``mldebug inspect-data ROWS --tokenizer fixtures/processors/qwen2-vl --all -f json`` in a
child process and reports its wall time, rows per second, peak resident memory and the image tokens it counted.
Not part of the test run.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def build(folder: Path, rows: int, images: int, side: int) -> Path:
    from PIL import Image

    rng = random.Random(0)
    (folder / "images").mkdir()
    for i in range(images):
        ratio = rng.uniform(0.5, 2.0)
        size = (max(1, int(side * ratio ** 0.5)), max(1, int(side / ratio ** 0.5)))
        Image.effect_noise(size, 60).convert("RGB").save(folder / "images" / f"{i}.png")
    data = folder / "rows.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for _ in range(rows):
            names = [f"images/{rng.randrange(images)}.png" for _ in range(rng.choice((1, 1, 2)))]
            messages = [{"role": "user", "content": "Describe the picture."},
                        {"role": "assistant", "content": "Grey noise, evenly spread. " * rng.randint(1, 20)}]
            out.write(json.dumps({"images": names, "messages": messages}) + "\n")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--side", type=int, default=640)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = build(Path(tmp), args.rows, args.images, args.side)
        command = [sys.executable, "-m", "mldebug_cli", "inspect-data", str(data), "--tokenizer",
                   str(ROOT / "fixtures" / "processors" / "qwen2-vl"), "--all", "--max-length", "4096", "-f", "json"]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
        wall = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    report = json.loads(done.stdout)
    summary = report["summary"]
    print(f"{args.rows} rows, {args.images} images of ~{args.side}px: {wall:.1f} s wall, "
          f"{args.rows / wall:.0f} rows/s, peak RSS {peak:.0f} MiB, {summary['tokens']:,} tokens, "
          f"findings {summary['by_check']}")


if __name__ == "__main__":
    main()
