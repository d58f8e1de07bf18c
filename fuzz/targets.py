"""Fuzz targets: each takes arbitrary bytes and must return, or raise only the error mldebug reports for bad input.

Anything else (an unexpected exception, a hang, a crash) is a bug. ``TARGETS`` maps names to
(function, seed folders); seeds are the small files in fixtures/ the target reads.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import struct
import sys
import tempfile
import zlib
from collections.abc import Callable
from datetime import date
from pathlib import Path

from mldebug_cli.core.errors import InputError, MldebugError
from mldebug_cli.render.chat import ChatRenderer, RenderLimits, TemplateRenderError
from mldebug_cli.render.gotemplate import Limits, TemplateError
from mldebug_cli.render.ollama import render as render_ollama
from mldebug_cli.sources.dataset import DatasetSource
from mldebug_cli.sources.gguf_file import read_gguf_vocab
from mldebug_cli.sources.modelfile import parse_modelfile
from mldebug_cli.sources.row_formats import RowProblem, detect, to_sample

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # tests/support.py: the protobuf wire writer the run-log tests use too
from support import tf_field, tf_record, tf_varint  # noqa: E402

FIXTURES = ROOT / "fixtures"
CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 + 2?"},
    {"role": "assistant", "content": "4"},
]
SPLIT = b"\n---conversation---\n"  # template bytes, then optionally a JSON conversation
JINJA_LIMITS = RenderLimits(seconds=2.0, output_chars=1_000_000, memory_bytes=256 * 2**20)
GO_LIMITS = Limits(max_output_chars=1_000_000, max_steps=200_000, max_depth=16)


def dataset_reader(data: bytes) -> None:
    """The file as .jsonl and as .json: row count, every record (parsed here and as workers parse), detection, conversion."""
    for suffix in (".jsonl", ".json"):
        path = _scratch_file(suffix, data)
        try:
            source = DatasetSource(str(path))
            len(source)
            records = list(source.records())
            raw = [r.parsed() for r in source.records(parse=False)]  # what the workers parse
            assert repr(raw) == repr(records), "records(parse=False) parsed differs from records()"  # repr: NaN != NaN
            detection = detect([r.data for r in records if r.error is None], str(path))
        except InputError:
            continue
        for record in records:
            try:
                to_sample(record.data, detection) if record.error is None else None
            except RowProblem:
                pass


def jinja_template(data: bytes) -> None:
    """A chat template (and a conversation) rendered by transformers' renderer within mldebug's limits."""
    template, conversation = _template_and_conversation(data)
    renderer = ChatRenderer(template, {"bos_token": "<s>", "eos_token": "</s>"}, limits=JINJA_LIMITS)
    for add_generation_prompt in (False, True):
        try:
            renderer.render(conversation, add_generation_prompt=add_generation_prompt, with_generation_spans=True)
        except TemplateRenderError:
            return


def go_template(data: bytes) -> None:
    """An Ollama Go template (and a conversation) rendered by the Go-template interpreter."""
    template, conversation = _template_and_conversation(data)
    try:
        render_ollama(template, conversation, system="Be brief.", today=date(2025, 1, 15), limits=GO_LIMITS)
    except (TemplateError, InputError):
        pass


def modelfile(data: bytes) -> None:
    try:
        parse_modelfile(data.decode("utf-8", errors="replace"), _scratch() / "Modelfile")
    except InputError:
        pass


def gguf(data: bytes) -> None:
    try:
        read_gguf_vocab(_scratch_file(".gguf", data))
    except InputError:
        pass


def parquet_footer(data: bytes) -> None:
    """A Parquet file as one dataset file (its footer sized before datasets reads it) and as a shard (scanned from
    its footer, then read chunk by chunk): a bad file is the one-line error or records of its error."""
    from mldebug_cli.sources.shards import Unreadable, read_chunk, scan_shard

    path = _scratch_file(".parquet", data)
    try:
        source = DatasetSource(str(path))
        for _ in source.records(list(range(4))):
            pass
    except InputError:
        pass
    chunks = scan_shard(str(path), kind="parquet")
    for chunk in [] if isinstance(chunks, Unreadable) else chunks[:4]:
        for _ in read_chunk(chunk, list(range(chunk.first_row, chunk.first_row + 4))):
            pass


def _parquet_seeds() -> dict[str, bytes]:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    def written(table: pa.Table, **options) -> bytes:
        out = io.BytesIO()
        pq.write_table(table, out, **options)
        return out.getvalue()

    chat = [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]
    big = pa.array([[{"role": "user", "content": "x" * (10 * 2**20)}, {"role": "assistant", "content": "4"}]])
    return {
        "chat.parquet": written(pa.table({"messages": [chat] * 8}), row_group_size=3),
        "text_nulls.parquet": written(pa.table({"text": ["a", None, "b" * 100]}), compression="zstd"),
        "bomb.parquet": written(pa.table({"messages": pa.chunked_array([big] * 60)}), row_group_size=1000,
                                compression="zstd"),
    }


def _gguf_array_seeds() -> dict[str, bytes]:
    """GGUF files of one array key: an array of arrays, a count past the bytes, strings past the item bound."""
    def one_key(key: bytes, body: bytes) -> bytes:
        return b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key + body

    tokens, merges = b"tokenizer.ggml.tokens", b"tokenizer.ggml.merges"
    return {
        "nested.gguf": one_key(tokens, struct.pack("<IIQ", 9, 9, 1) + struct.pack("<IQ", 8, 1) + b"\0" * 9),
        "claims_billions.gguf": one_key(tokens, struct.pack("<IIQ", 9, 8, 400_000_000) + b"\0" * 64),
        "long_string.gguf": one_key(merges, struct.pack("<IIQ", 9, 8, 2) + struct.pack("<Q", 2**40) + b"ab"),
        "types.gguf": one_key(b"tokenizer.ggml.token_type", struct.pack("<IIQ", 9, 5, 2**62) + b"\0" * 32),
    }


RUN_LOG_FORMATS = (  # (format, file name): the first input byte picks one
    ("trainer-state", "trainer_state.json"), ("jsonl", "trainer_log.jsonl"), ("console", "train.log"),
    ("csv", "history.csv"), ("torchtune", "log_1.txt"), ("tensorboard", "events.out.tfevents.1.host"),
    ("wandb", "run-1.wandb"),
)
RECORD_SPLIT = b"|record|"  # TensorBoard and W&B inputs: the payloads, framed here so mutations reach the decoder


def run_log(data: bytes) -> None:
    """A run log of one of the formats (the first byte picks it), read as check-run reads it."""
    from mldebug_cli.sources.runlog import read_run

    if not data:
        return
    fmt, name = RUN_LOG_FORMATS[data[0] % len(RUN_LOG_FORMATS)]
    body = data[1:]
    if fmt == "tensorboard":
        body = b"".join(tf_record(payload) for payload in body.split(RECORD_SPLIT))
    elif fmt == "wandb":
        body = b":W&B\x00\x01\x00" + b"".join(_leveldb_record(payload) for payload in body.split(RECORD_SPLIT))
    folder = _scratch() / "run"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(body)
    try:
        read_run(path, fmt)
    except InputError:
        pass


def training_config(data: bytes) -> None:
    """A training config as YAML and as JSON, and mldebug's own settings as TOML."""
    from mldebug_cli.core.config import read_file
    from mldebug_cli.frameworks.registry import VERSION_PACKAGES
    from mldebug_cli.sources.config_file import load_config

    for suffix in (".yaml", ".json"):
        try:
            load_config(_scratch_file(suffix, data))
        except InputError:
            pass
    try:
        read_file(_scratch_file(".toml", data).rename(_scratch() / "mldebug.toml"), version_packages=VERSION_PACKAGES)
    except MldebugError:  # ConfigError
        pass


def model_config(data: bytes) -> None:
    """A model's config.json as memory reads it (sizes checked against sane ranges) and as probe counts it."""
    from mldebug_cli.memory.shapes import read_model_shape
    from mldebug_cli.probe.model import parameter_count

    folder = _scratch() / "model"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_bytes(data)
    for read in (read_model_shape, parameter_count):
        try:
            read(str(folder))
        except InputError:
            pass


def safetensors_header(data: bytes) -> None:
    """A .safetensors file's header checked as probe checks it before transformers maps the file."""
    from mldebug_cli.sources.safetensors_header import check_header

    try:
        check_header(_scratch_file(".safetensors", data))
    except InputError:
        pass


WATCH_FORMATS = (("jsonl", "trainer_log.jsonl"), ("torchtune", "log_1.txt"), ("console", "train.log"),
                 ("tensorboard", "events.out.tfevents.1"))
WATCH_STEP = b"|step|"  # a watch input: the format byte, then steps, each an operation byte and its bytes
WATCH_OPERATIONS = ("append", "append", "append", "truncate", "replace", "delete", "fifo", "dev-zero")


def watch_follow(data: bytes) -> None:
    """``check-run --watch``'s reader across a followed log's life: appended to (cut mid-line or mid-record),
    truncated, replaced by a new file, deleted, replaced by a FIFO or a link to /dev/zero; each read after a step
    returns what was read so far or raises the one-line error (never hangs on the FIFO, never reads /dev/zero)."""
    from mldebug_cli.sources.runlog.follow import Follower

    if not data:
        return
    fmt, name = WATCH_FORMATS[data[0] % len(WATCH_FORMATS)]
    folder = _scratch() / "watch"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    path = folder / name
    path.write_bytes(b"")
    follower = None
    for step in data[1:].split(WATCH_STEP)[:16]:
        operation = WATCH_OPERATIONS[step[0] % len(WATCH_OPERATIONS)] if step else "append"
        body = step[1:]
        if fmt == "tensorboard" and body:
            body = tf_record(body)
        _watch_step(path, operation, body)
        if not path.exists() and not path.is_symlink():
            continue  # the watch itself waits for a file that is gone (and ends after 3 reads)
        try:
            follower = follower or Follower(path, fmt)
            follower.poll()
        except InputError:
            pass


def _watch_step(path: Path, operation: str, body: bytes) -> None:
    special = path.is_symlink() or (path.exists() and not path.is_file())
    if (special or operation in ("delete", "fifo", "dev-zero", "replace")) and (path.exists() or path.is_symlink()):
        path.unlink()  # the writer never opens the FIFO (that would wait for a reader) nor writes /dev/zero
    if operation == "append":
        with open(path, "ab") as fh:
            fh.write(body)
    elif operation in ("truncate", "replace"):
        fresh = path.with_suffix(".new") if operation == "replace" else path
        fresh.write_bytes(body)
        fresh.rename(path)
    elif operation == "fifo":
        os.mkfifo(path)
    elif operation == "dev-zero":
        path.symlink_to("/dev/zero")


def _watch_seeds() -> dict[str, bytes]:
    pick = {fmt: bytes([i]) for i, (fmt, _name) in enumerate(WATCH_FORMATS)}
    op = {name: bytes([WATCH_OPERATIONS.index(name)]) for name in WATCH_OPERATIONS}
    line = b'{"current_steps": %d, "total_steps": 9, "loss": 1.5}\n'
    return {
        "grow_and_cut.bin": pick["jsonl"] + WATCH_STEP.join([op["append"] + line % 1, op["append"] + (line % 2)[:20],
                                                             op["append"] + (line % 2)[20:] + line % 3]),
        "truncate_replace.bin": pick["jsonl"] + WATCH_STEP.join([op["append"] + line % 1 + line % 2,
                                                                 op["truncate"] + line % 1,
                                                                 op["replace"] + line % 5, op["delete"],
                                                                 op["append"] + line % 6]),
        "fifo.bin": pick["jsonl"] + WATCH_STEP.join([op["append"] + line % 1, op["fifo"], op["append"] + line % 2]),
        "dev_zero.bin": pick["console"] + WATCH_STEP.join([op["append"] + b"{'loss': 2.5, 'epoch': 0.1}\n",
                                                           op["dev-zero"]]),
        "torchtune.bin": pick["torchtune"] + WATCH_STEP.join([op["append"] + b"Step 1 | loss:2.5 lr:0.0001\n",
                                                              op["append"] + b"Step 2 | loss:n", op["append"] + b"an\n"]),
        "long_line.bin": pick["jsonl"] + WATCH_STEP.join([op["append"] + b"x" * 40_000, op["append"] + b"\n" * 3]),
    }


def _model_config_seeds() -> dict[str, bytes]:
    real = (FIXTURES / "memory-models" / "qwen2.5-0.5b" / "config.json").read_bytes()
    head = real.rstrip().rstrip(b"}").rstrip()
    return {"real.json": real, **{f"{name}.json": head + b",\n  " + extra + b"\n}\n" for name, extra in (
        ("experts", b'"num_experts": 1e9'), ("layers", b'"num_hidden_layers": 1e999'), ("heads", b'"num_attention_heads": 0'),
        ("digits", b'"vocab_size": ' + b"9" * 4000), ("null_inter", b'"intermediate_size": null'),
        ("text_config", b'"text_config": {"hidden_size": -1}'))}}


def _safetensors_seeds() -> dict[str, bytes]:
    def file(header: dict, data: bytes = b"\0" * 16) -> bytes:
        raw = json.dumps(header).encode()
        return struct.pack("<Q", len(raw)) + raw + data

    tensor = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
    return {"ok.safetensors": file({"__metadata__": {"format": "pt"}, "w": tensor}),
            "past_end.safetensors": file({"w": {**tensor, "data_offsets": [0, 10**15]}}),
            "huge_shape.safetensors": file({"w": {**tensor, "shape": [10**9, 10**9]}}),
            "overlap.safetensors": file({"w": {**tensor, "shape": [2], "data_offsets": [0, 8]},
                                         "v": {**tensor, "shape": [2], "data_offsets": [4, 12]}}),
            "long_length.safetensors": struct.pack("<Q", 10**12) + b"{}"}


def _leveldb_record(payload: bytes) -> bytes:
    payload = payload[:32000]  # one chunk of a block
    crc = zlib.crc32(payload, zlib.crc32(bytes([1]))) & 0xFFFFFFFF
    return struct.pack("<IHB", crc, len(payload), 1) + payload


class GeneratedSeeds:
    """Seeds of the hostile shapes, written on first use into the scratch folder (no binary files in the
    repository); has the ``rglob`` that fuzz/run.py and the tests call on a seed folder."""

    def __init__(self, name: str, make: Callable[[], dict[str, bytes]]) -> None:
        self.name, self.make = name, make

    def rglob(self, pattern: str):
        folder = _scratch() / f"seeds-{self.name}"
        if not folder.exists():
            folder.mkdir()
            for file_name, data in self.make().items():
                (folder / file_name).write_bytes(data)
        return folder.rglob(pattern)


def _dataset_seeds() -> dict[str, bytes]:
    ok = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "4"}]}'
    return {
        "long_number.jsonl": ok + b'\n{"messages": [], "n": ' + b"9" * 4400 + b"}\n",
        "surrogate.jsonl": b'{"messages": [{"role": "user", "content": "\\ud800"}]}\n' + ok + b"\n",
        "token_ids.jsonl": b'{"input_ids": [1, -1, 1099511627776], "labels": [-100, 2, 3]}\n',
        "deep.json": b"[" + ok + b", " + b"[" * 2000 + b"]" * 2000 + b"]",
        "bom_blank.jsonl": b"\xef\xbb\xbf" + b"\n" * 70_000 + ok + b"\n",
        "control_bytes.jsonl": ok.replace(b"hi", b"\\u001b]0;title\\u0007\\u009b"),
    }


def _run_log_seeds() -> dict[str, bytes]:
    def tf_event(step: int, tag: bytes, value: bytes, wire: int = 5) -> bytes:
        item = tf_field(1, 2, tag) + tf_field(2, wire, value)
        return tf_field(1, 1, struct.pack("<d", 1.0)) + tf_field(2, 0, tf_varint(step)) + tf_field(5, 2, tf_field(1, 2, item))

    def wandb_history(step: int, key: bytes, value: bytes) -> bytes:
        item = tf_field(1, 2, key) + tf_field(16, 2, value)
        return tf_field(2, 2, tf_field(1, 2, item) + tf_field(2, 2, tf_field(1, 0, tf_varint(step))))

    pick = {fmt: bytes([i]) for i, (fmt, _name) in enumerate(RUN_LOG_FORMATS)}
    return {
        "state_empty.json": pick["trainer-state"] + b'{"log_history": []}',
        "state_bom_inf.json": pick["trainer-state"] + b'\xef\xbb\xbf{"log_history": [{"step": 1e999, "loss": 1}, '
                              b'{"step": 2, "loss": ' + b"9" * 4400 + b'}, {"step": 3, "loss": 0.5}]}',
        "jsonl_steps.jsonl": pick["jsonl"] + b'{"current_steps": -1, "loss": 1}\n{"current_steps": 1e400, "loss": 2}\n'
                             b'{"current_steps": 3, "loss": NaN}\n',
        "console.log": pick["console"] + b"{'loss': 2.5, 'epoch': 0.1}\n\x1b]0;title\x07 5/40 [00:01<00:10]\n",
        "history.csv": pick["csv"] + b"Step," + b",".join(b"m%d" % i for i in range(200)) + b"\n1," + b"1," * 199 + b"x\n",
        "torchtune.txt": pick["torchtune"] + b"Step 1 | loss:2.5 lr:0.0001\nStep inf | loss:nan\n",
        "tensorboard_wire.bin": pick["tensorboard"] + RECORD_SPLIT.join([
            tf_event(1, b"train/loss", struct.pack("<f", 2.0)),
            tf_event(2, b"train/loss", tf_varint(7), wire=0),  # a varint where a float is expected
            tf_event(3, b"train/loss", struct.pack("<f", 1.5)),
        ]),
        "wandb_history.bin": pick["wandb"] + RECORD_SPLIT.join([
            wandb_history(0, b"train/loss", b"2.0"), wandb_history(1, b"train/loss", b"9" * 4400),
            wandb_history(2, b"train/loss", b"NaN"), b"junk after the records",
        ]),
    }


def _config_seeds() -> dict[str, bytes]:
    return {
        "long_int.yaml": b"learning_rate: 0.0001\nmax_steps: " + b"9" * 4400 + b"\n",
        "sigma_nan.toml": b"[checks.loss-spike]\nsigma = nan\nwindow = 1e300\n",
        "deep.json": b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "aliases.yaml": b"a: &a [1, 2]\nb: &b [*a, *a]\nc: [*b, *b]\n",
        "plain.yaml": (FIXTURES / "configs" / "hf_training_args.yaml").read_bytes(),
        "plain.json": (FIXTURES / "configs" / "hf_training_args.json").read_bytes(),
        "mldebug.toml": b'fail-on = "warning"\nselect = ["DS", "RN003"]\n[checks.loss-spike]\nsigma = 8\nwindow = 64\n',
    }


def _template_and_conversation(data: bytes) -> tuple[str, list]:
    template, _, rest = data.partition(SPLIT)
    conversation = CONVERSATION
    if rest:
        try:
            parsed = json.loads(rest)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, list) and all(isinstance(m, dict) for m in parsed):
            conversation = parsed
    return template.decode("utf-8", errors="replace"), conversation


def _scratch_file(suffix: str, data: bytes) -> Path:
    path = _scratch() / f"input{suffix}"
    path.write_bytes(data)
    return path


@functools.cache
def _scratch() -> Path:
    """Made on first use, so listing the targets creates nothing."""
    return Path(tempfile.mkdtemp(prefix="mldebug-fuzz-"))


TARGETS: dict[str, tuple[Callable[[bytes], None], tuple[Path | GeneratedSeeds, ...]]] = {
    "dataset_reader": (dataset_reader, (FIXTURES / "hostile" / "datasets", FIXTURES / "datasets" / "demo",
                                        GeneratedSeeds("datasets", _dataset_seeds))),
    "jinja_template": (jinja_template, (FIXTURES / "hostile" / "templates", FIXTURES / "templates")),
    "go_template": (go_template, (FIXTURES / "templates" / "go", FIXTURES / "hostile" / "ollama")),
    "modelfile": (modelfile, (FIXTURES / "hostile" / "ollama",)),
    "gguf": (gguf, (FIXTURES / "hostile" / "gguf", GeneratedSeeds("gguf_arrays", _gguf_array_seeds))),
    "parquet_footer": (parquet_footer, (GeneratedSeeds("parquet", _parquet_seeds),)),
    "run_log": (run_log, (GeneratedSeeds("run_logs", _run_log_seeds),)),
    # not fixtures/hostile/configs: its alias bombs take a second an input (tests/reliability/test_configs.py has them)
    "training_config": (training_config, (GeneratedSeeds("configs", _config_seeds),)),
    "model_config": (model_config, (GeneratedSeeds("model_configs", _model_config_seeds),)),
    "safetensors_header": (safetensors_header, (GeneratedSeeds("safetensors", _safetensors_seeds),)),
    "watch_follow": (watch_follow, (GeneratedSeeds("watch", _watch_seeds),)),
}
