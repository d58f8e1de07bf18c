"""Which Python objects the inspect-data driver keeps as a Ray run goes on: the garbage collector's objects counted by
type at a fifth of the rows and at the end, the rows' work replayed (tests/support.py ``replay_rows``).

    python benchmarks/driver_types.py DATASET RESULTS_PICKLE [--tokenizer fixtures/tokenizers/qwen2.5-instruct]

DATASET is a folder of bench_ray.py's small rows and RESULTS_PICKLE the replayed results, as bench_driver.py
``--whole --data DIR`` leaves them (``DIR/small-N``, ``DIR/first-rows-results.pickle``). Prints the types whose count
grew, most first: a driver that keeps something per batch shows it here (once the findings' caps are full, from about
10^5 rows on these rows). Not part of the test run.
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def counts() -> collections.Counter:
    gc.collect()
    return collections.Counter(f"{type(o).__module__!s}.{type(o).__qualname__!s}" for o in gc.get_objects())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("results")
    parser.add_argument("--tokenizer", default=str(ROOT / "fixtures/tokenizers/qwen2.5-instruct"))
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    import ray

    from mldebug_cli.pipelines.inspect import InspectOptions, build_report
    from mldebug_cli.pipelines.ray_engine import local_priority
    from support import replay_rows

    replay_rows(args.results)

    def replaying() -> None:  # Ray's setup hook: a named function (it exports the hook by name)
        replay_rows(args.results)

    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])  # support
    local_priority()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error",
             runtime_env={"worker_process_setup_hook": replaying})
    options = InspectOptions(dataset=args.dataset, tokenizer=args.tokenizer, all_rows=True, max_length=512,
                             engine="ray", ray_concurrency=2)
    early: list[tuple[int, collections.Counter]] = []

    def progress(done: int, total: int) -> None:
        if not early and done >= total // 5:
            early.append((done, counts()))

    report = build_report(options, progress)
    late = counts()
    print(f"rows {early[0][0]:,} -> {report.summary['rows_checked']:,}; the types that grew:")
    for name, n in (late - early[0][1]).most_common(args.top):
        print(f"{n:+9,} {name}")


if __name__ == "__main__":
    main()
