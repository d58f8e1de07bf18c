"""--engine ray: the row pass of inspect-data (and of preflight's data sections) on Ray Data.

Ray Data reads the dataset in read tasks (a chunk of a shard each: sources.shards) and hands batches of records to
a pool of actors; each actor holds the pipeline's batch engine (the tokenizer, the template renderer and the
framework's row profile, sent once through the object store) and runs the same ``engine.process(batch)`` the
in-process path runs. The driver gets the batch results back in row order and reduces them exactly as the
in-process path does, so the report is the same; it holds no rows, only the results' findings, counts and the
few row views that can still be shown.

A dead actor is restarted and its batch retried (``ACTOR_RESTARTS`` times), then the run stops with one line.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import socket
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from mldebug_cli.core.errors import InputError, MldebugError, UsageError, in_one_line
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.shards import Chunk, ShardedSource, is_sharded, plan_shards, read_chunk, scan_shard

CONNECT_TIMEOUT_S = 10
CLUSTER_HINT = "pass --ray-address auto (on a cluster node), HOST:6379 or ray://HOST:10001"
ACTOR_RESTARTS = 3  # a dead actor is restarted (and its batch retried) this many times before the run fails
SPLIT_KINDS = ("jsonl", "parquet")  # single files Ray reads in chunks; other kinds are read by one task


def describe(options) -> str:
    actors = f"up to {options.ray_concurrency} actors" if options.ray_concurrency else "up to an actor per CPU"
    return f"ray (Ray Data, {actors}, cluster {options.ray_address or os.environ.get('RAY_ADDRESS') or 'local'})"


def connect(address: str | None):
    """Ray, connected to ``address`` (or to the cluster this process already joined)."""
    try:
        import ray
    except ImportError:
        raise UsageError("--engine ray needs Ray Data, which is not installed", hint="pip install 'mldebug[ray]'") from None
    if ray.is_initialized():
        return ray
    where = address or os.environ.get("RAY_ADDRESS")
    if where is None:
        local_priority()
    try:
        _reachable(where)  # Ray itself retries an unreachable address for minutes
        ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING, include_dashboard=False)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError, OSError) as exc:
        raise InputError(f"cannot reach the Ray cluster at {where or 'a new local instance'}: {_one_line(exc)}",
                         hint=CLUSTER_HINT) from None
    return ray


def local_priority() -> None:
    """A Ray instance started here runs its workers at this process's priority, as the in-process path's workers
    do (Ray nices them by 15 by default: on a busy machine they would get a fraction of a core)."""
    os.environ.setdefault("RAY_worker_niceness", "0")


def _reachable(address: str | None) -> None:
    """Raise OSError when nothing listens at a HOST:PORT (or ray://HOST:PORT) address."""
    host, _, port = (address or "").split("://", 1)[-1].rpartition(":")
    if port.isdigit():
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=CONNECT_TIMEOUT_S).close()


def open_dataset(options) -> DatasetSource | ShardedSource:
    """The dataset, its shards scanned by Ray tasks (one per shard); a single JSON Lines or Parquet file is one shard."""
    ray = connect(options.ray_address)
    scan = ray.remote(num_cpus=1)(scan_shard)
    if is_sharded(options.dataset):
        return ShardedSource(options.dataset,
                             plan_shards(options.dataset, lambda shards: ray.get([scan.remote(s) for s in shards])))
    source = DatasetSource(options.dataset, options.split)
    if source.kind not in SPLIT_KINDS:
        return source
    plan = plan_shards(options.dataset, lambda shards: ray.get([scan.remote(s, kind=source.kind) for s in shards]))
    if plan.unreadable:
        raise InputError(f"{options.dataset}: cannot read it: {plan.unreadable[0].reason}")
    return ShardedSource(options.dataset, plan)


def batch_results(engine, source, indices: list[int] | None, options, batch_size: int) -> Iterator[Any]:
    """``engine.process`` on every batch of ``batch_size`` rows (only ``indices`` when given), on Ray Data, in row
    order."""
    ray = connect(options.ray_address)
    from ray.data import ActorPoolStrategy, DataContext, TaskPoolStrategy

    context = DataContext.get_current()
    context.execution_options.preserve_order = True  # the reduction sees the batches as the in-process path does
    context.enable_progress_bars = sys.stderr.isatty()
    units = _units(source, indices)
    concurrency = options.ray_concurrency or max(1, int(ray.cluster_resources().get("CPU", 1)))
    engine_ref = ray.put(engine)  # cloudpickled: the setup holds closures over the tokenizer
    with warnings.catch_warnings():  # max_restarts has no named parameter yet (Ray 2.60 warns on **ray_remote_args)
        warnings.simplefilter("ignore", DeprecationWarning)
        dataset = (
            ray.data.from_items([{"unit": pickle.dumps(u)} for u in units], override_num_blocks=len(units))
            # reading takes no CPU of its own (a pool holding every CPU would wait for rows forever), and as many
            # read tasks at a time as actors (unbounded, Ray would start a worker process for each chunk)
            .map_batches(_read_unit, batch_size=1, batch_format="pyarrow", fn_kwargs={"batch_size": batch_size},
                         num_cpus=0, compute=TaskPoolStrategy(size=concurrency))
            .map_batches(_BatchWorker, batch_size=1, batch_format="pyarrow", fn_constructor_args=([engine_ref],),
                         # from one actor up to ``concurrency``, as the batches queue: a fixed pool larger than the
                         # blocks that reach it (a small file is one block) would start actors with nothing to do
                         compute=ActorPoolStrategy(min_size=1, max_size=concurrency), num_cpus=1,
                         max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS)
        )
    # a batch retried after its actor died may come back twice: it is counted once. The batches come in row order
    # (preserve_order), so the last first row seen is all the driver keeps (a set of every batch would grow with rows)
    last = -1
    # Ray prints its raylet's messages (a worker died, a task retried) on stdout, where the report goes
    with contextlib.redirect_stdout(sys.stderr):
        try:
            for block in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
                for first, blob in zip(block.column("first").to_pylist(), block.column("result").to_pylist()):
                    if first > last:
                        last = first
                        yield pickle.loads(blob)
        except ray.exceptions.RayError as exc:
            raise _reported(exc, ray) from None


def _units(source, indices: list[int] | None) -> list[tuple]:
    """What each read task reads: a chunk of a shard (with the wanted rows in it), or a whole other source."""
    wanted = None if indices is None else sorted(set(indices))
    if not isinstance(source, ShardedSource):
        return [("source", source.spec, source.split, wanted)]
    units = []
    for chunk in source.plan.chunks:
        inside = None if wanted is None else [i for i in wanted if chunk.first_row <= i < chunk.first_row + chunk.rows]
        if inside != []:
            units.append(("chunk", chunk, inside))
    return units or [("chunk", None, [])]


def _records(unit: tuple):
    if unit[0] == "source":
        _, spec, split, wanted = unit
        return DatasetSource(spec, split).records(wanted, parse=False)
    _, chunk, wanted = unit
    return read_chunk(chunk, wanted) if isinstance(chunk, Chunk) else iter(())


def _read_unit(batch, batch_size: int):
    """A read task: the unit's records, ``batch_size`` to an output row (pickled, whatever the rows' columns)."""
    import pyarrow as pa

    unit = pickle.loads(batch.column("unit")[0].as_py())
    records: list = []
    for record in _records(unit):
        records.append(record)
        if len(records) == batch_size:
            yield pa.table({"records": pa.array([pickle.dumps(records)], pa.binary())})
            records = []
    if records:
        yield pa.table({"records": pa.array([pickle.dumps(records)], pa.binary())})


class _BatchWorker:
    """An actor of the pool: holds the batch engine and runs its ``process`` on each batch of records."""

    def __init__(self, engine_ref: list) -> None:
        import ray

        os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one Rust thread per actor, as forked workers do
        self.engine = ray.get(engine_ref[0])

    def __call__(self, batch):
        import pyarrow as pa

        batches = [pickle.loads(blob) for blob in batch.column("records").to_pylist()]
        results = [pickle.dumps(self.engine.process(records)) for records in batches]
        return pa.table({"first": pa.array([records[0].index for records in batches], pa.int64()),
                         "result": pa.array(results, pa.binary())})


def _reported(exc: BaseException, ray) -> MldebugError | BaseException:
    """A known failure as one line: an mldebug error raised in a task, or a worker that died past its retries."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MldebugError):
            return seen
        if isinstance(seen, (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError)):
            return InputError(f"a Ray worker died while checking rows, and Ray's {ACTOR_RESTARTS} retries ran out: "
                              f"{_one_line(seen)}", hint="see `ray logs` or the dashboard; a worker killed for memory "
                              "needs more memory per CPU (--ray-concurrency lower)")
        seen = getattr(seen, "cause", None) or seen.__cause__
    return exc


def _one_line(exc: BaseException) -> str:
    return in_one_line(exc, 300) or type(exc).__name__
