"""Benchmark: the batch plan's replay of the Trainer's sampler (pure Python below 20,000 rows, torch's
``randperm`` from there when torch is installed), and torch's own ``randperm`` for comparison.

    python benchmarks/bench_batch_plan.py [--rows 10000 100000 1000000]

For each dataset size: the time to name the rows of one optimizer step in the middle of epoch 2
(``BatchPlan.step``: one shuffled order per rank and epoch asked), to list the first epoch's micro-batches
(what ``memory`` does) and ``torch.randperm`` on a seeded generator; then axolotl's dataset preparation before its
sampler (``frameworks.axolotl.batch_plan.config_plan``: numpy's shuffle of the rows, the length filter, the plan over
what is left) and one step of that plan, on rows of drawn lengths (the rows' encoding, which inspect-data does
first, is not in it). Not part of the test run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mldebug_cli.schedule.batch_plan import BatchPlan, SamplerSettings  # noqa: E402


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    options = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    print(f"{'rows':>10} {'step (s)':>9} {'epoch batches (s)':>18} {'torch.randperm (s)':>19}")
    for rows in options.rows:
        plan = BatchPlan(SamplerSettings(samples=rows, micro_batch_size=8, gradient_accumulation_steps=4,
                                         world_size=2, epochs=3))
        middle = plan.steps_per_epoch + plan.steps_per_epoch // 2
        step = timed(lambda plan=plan, middle=middle: plan.step(middle))
        epoch = timed(lambda plan=plan: plan.epoch_micro_batches(0))
        if torch is not None:
            generator = torch.Generator()
            generator.manual_seed(42)
            native = f"{timed(lambda n=rows, g=generator: torch.randperm(n, generator=g)):19.3f}"
        else:
            native = f"{'(no torch)':>19}"
        print(f"{rows:>10,} {step:9.2f} {epoch:18.2f} {native}")
    print(f"\n{'rows':>10} {'axolotl preparation + plan (s)':>31} {'its step (s)':>13}")
    for rows in options.rows:
        prepared, step = axolotl_plan_times(rows)
        print(f"{rows:>10,} {prepared:31.2f} {step:13.2f}")


def axolotl_plan_times(rows: int) -> tuple[float, float]:
    import random

    from mldebug_cli.frameworks.axolotl.batch_plan import config_plan
    from mldebug_cli.sources.config_file import ConfigFile

    draw = random.Random(0)
    kept = [(row, draw.randint(2, 2048), 1) for row in range(rows) if draw.random() > 0.05]  # 5% dropped for length
    config = ConfigFile("axolotl.yml", {"seed": 3, "sequence_len": 2048, "micro_batch_size": 4,
                                        "gradient_accumulation_steps": 8, "num_epochs": 2})
    holder: list = []
    prepared = timed(lambda: holder.append(config_plan(config, 1, kept, rows)))
    plan = holder[0].plan
    return prepared, timed(lambda: plan.step(plan.steps_per_epoch + plan.steps_per_epoch // 2))


if __name__ == "__main__":
    main()
