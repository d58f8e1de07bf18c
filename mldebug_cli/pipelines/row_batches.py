"""The row-batch runner the SFT and preference pipelines share: which rows are checked, batches of them, and the
worker processes that check the batches (forked; each batch's result comes back in order), or, with --engine ray,
Ray Data's actors (pipelines.ray_engine) running the same ``process`` on the same batches.

A pipeline hands ``run_batches`` an engine: any object whose ``process(batch)`` turns a list of dataset records into
one picklable result.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import Finding, Hit, Location
from mldebug_cli.pipelines import ray_engine
from mldebug_cli.sources.dataset import DatasetSource, Record
from mldebug_cli.sources.shards import ShardedSource, open_dataset

RowSource = DatasetSource | ShardedSource  # a dataset read in this process: one file or folder, or its shards

DEFAULT_SAMPLE = 200
BATCH_SIZE = 256


class BatchEngine(Protocol):
    def process(self, batch: list[Record]) -> Any: ...


def sample_indices(options: Any, total: int) -> list[int] | None:
    """The rows to check: --all (None: every row), --rows, else --sample N (default 200) evenly spaced."""
    if options.all_rows:
        return None
    if options.rows:
        inside = sorted({r for r in options.rows if r < total})
        if not inside:  # nothing asked for is there: a typo, not a range that runs on past the end
            raise UsageError(f"--rows: row {min(options.rows)} is past the end of the dataset ({total} rows, 0-based)")
        return inside
    n = options.sample or DEFAULT_SAMPLE
    if n >= total:
        return None
    return sorted({round(i * (total - 1) / (n - 1)) for i in range(n)}) if n > 1 else [0]


def rows_past_the_end(options: Any, total: int) -> str:
    """What the report says of --rows that ran past the end of the dataset (those rows are left out), or ""."""
    past = sorted({r for r in options.rows or () if r >= total})
    if not past:
        return ""
    shown = f"row {past[0]}" if len(past) == 1 else f"rows {past[0]}-{past[-1]}" if past[-1] - past[0] == len(past) - 1 \
        else f"{len(past)} rows from {past[0]}"
    return f"; {shown} past the end of the {total}-row dataset left out"


def first_records(source: RowSource, n: int) -> list[Record]:
    out = []
    for record in source.records(list(range(n))):
        out.append(record)
    return out


def batches(records: Iterable[Record], size: int) -> Iterator[list[Record]]:
    batch: list[Record] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def open_rows(options: Any) -> DatasetSource | ShardedSource:
    """The dataset the options name; with --engine ray its shards are scanned on the cluster."""
    if options.engine == "ray":
        return ray_engine.open_dataset(options)
    return open_dataset(options.dataset, options.split)


def batch_results(engine: BatchEngine, source, indices: list[int] | None, options: Any, workers: int) -> Iterator[Any]:
    """Every batch's result (``engine.process`` on it), in row order: here and in forked workers, or on Ray Data."""
    if options.engine == "ray":
        return ray_engine.batch_results(engine, source, indices, options, BATCH_SIZE)
    return run_batches(engine, batches(source.records(indices, parse=False), BATCH_SIZE), workers)


def engine_line(options: Any) -> dict[str, str]:
    """The report's engine line: only for --engine ray (the in-process report has none)."""
    return {"engine": ray_engine.describe(options)} if options.engine == "ray" else {}


def unreadable_shards(source, checks: list, code: str) -> list[Finding]:
    """One ``code`` finding for each shard that could not be read (the other shards are checked)."""
    check = next((c for c in checks if c.code == code), None)
    if check is None or not isinstance(source, ShardedSource):
        return []
    return [check.finding(Hit(f"the shard cannot be read ({u.reason}); its rows are not checked",
                              "repair or remove the shard; the other shards were checked", Location(path=u.shard)))
            for u in source.plan.unreadable]


_ENGINE: BatchEngine | None = None  # set before forking workers, which inherit it


def _work(batch: list[Record]) -> Any:
    assert _ENGINE is not None  # run_batches sets it before forking the workers that call this
    return _ENGINE.process(batch)


def _quiet_worker() -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one Rust thread per worker process


def run_batches(engine: BatchEngine, batches: Iterator[list[Record]], workers: int) -> Iterator[Any]:
    """Batches in order, processed here or by ``workers`` forked processes."""
    global _ENGINE
    if workers <= 1:
        yield from map(engine.process, batches)
        return
    import gc
    import multiprocessing

    _ENGINE = engine
    gc.freeze()  # what the workers inherit is never collected there: no scans of it, no copy-on-write from the collector
    try:
        with multiprocessing.get_context("fork").Pool(workers, initializer=_quiet_worker) as pool:
            # at most a few batches in flight: Pool.imap would read the whole dataset into its queue
            pending: deque = deque()
            for batch in batches:
                pending.append(pool.apply_async(_work, (batch,)))
                if len(pending) >= 2 * workers:
                    yield pending.popleft().get()
            while pending:
                yield pending.popleft().get()
    finally:
        _ENGINE = None
        gc.unfreeze()


def workers_for(requested: int | None, rows: int) -> int:
    """Worker processes: as asked, else one per available core; none for small runs, where forking costs more."""
    if requested is not None:
        return max(1, requested)
    if rows < 4 * BATCH_SIZE or not hasattr(os, "fork"):
        return 1
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
