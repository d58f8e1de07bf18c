"""The hostile-input table of issue 25: reader/format x hostile input -> outcome, wall time, peak memory.

    python benchmarks/bench_hostile.py [--only NAME ...] [--markdown]

Builds each input in a temporary folder (symlinks to /dev/zero, FIFOs, outputs onto inputs, huge numbers,
surrogates, a billion-step schedule, a million-column CSV, a 10^6-action Go template, ...), runs mldebug on it
in a child process under a 4 GiB memory cap and a 300 s limit, and prints one row per case: the exit code,
the outcome (the error line, or the finding codes), whether every input is unchanged byte for byte, whether a
raw control byte reached stdout/stderr, the wall time and the child's peak RSS (VmHWM). Not part of the test
run; needs Linux (FIFOs, /dev/zero, /proc).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "fixtures" / "tokenizers" / "qwen2.5-instruct"
sys.path.insert(0, str(ROOT / "tests"))  # tests/support.py: the protobuf wire writer the run-log tests use too
from support import tf_field, tf_record, tf_varint  # noqa: E402

OK = {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]}
LONG = "9" * 5000
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, resource.RLIM_INFINITY))
from mldebug_cli.cli import main
sys.argv = ["mldebug", *sys.argv[1:]]
try:
    main()
finally:
    peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    sys.stderr.write(f"\\nPEAK_KIB {peak}\\n")
"""


def jsonl(*rows) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def tf_event(step: int, tag_field: bytes) -> bytes:
    item = tag_field + tf_field(2, 5, struct.pack("<f", 1.0))
    return tf_field(1, 1, struct.pack("<d", 1.0)) + tf_field(2, 0, tf_varint(step)) + tf_field(5, 2, tf_field(1, 2, item))


def cases(d: Path):
    """(reader/format, hostile input, argv, inputs to keep unchanged) for each case; files made in ``d``."""
    tok = str(TOKENIZER)
    ds = d / "d.jsonl"
    ds.write_text(jsonl(OK))
    tokcopy = d / "tok"
    shutil.copytree(TOKENIZER, tokcopy)
    yield "inspect-data -o", "-o onto the dataset", ["inspect-data", ds, "-t", tok, "-o", ds], [ds]
    yield "inspect-data -o", "-o onto tokenizer_config.json", ["inspect-data", ds, "-t", tokcopy, "-o",
                                                               tokcopy / "tokenizer_config.json"], [ds, tokcopy]
    link = d / "report.sarif"
    link.symlink_to(ds)
    yield "inspect-data -f sarif", "-o a symlink to the dataset", ["inspect-data", ds, "-t", tok, "-f", "sarif", "-o", link], [ds]
    other = d / "other.txt"
    other.write_text("x\n")
    (d / "planted.sarif").symlink_to(other)
    yield "inspect-data -f sarif", "-o a planted symlink elsewhere", ["inspect-data", ds, "-t", tok, "-f", "sarif", "-o",
                                                                       d / "planted.sarif"], [ds, other]
    cfg = d / "train.yaml"
    cfg.write_text("learning_rate: 2.0e-5\nper_device_train_batch_size: 16\nmax_steps: 100\n")
    yield "preflight --sarif", "--sarif onto the config", ["preflight", cfg, "--sarif", cfg, "-t", tok], [cfg]
    zero_tok = d / "tok_zero"
    shutil.copytree(TOKENIZER, zero_tok)
    (zero_tok / "tokenizer.json").unlink()
    (zero_tok / "tokenizer.json").symlink_to("/dev/zero")
    yield "tokenizer folder", "tokenizer.json -> /dev/zero", ["inspect-data", ds, "-t", zero_tok], [ds]
    fifo_tok = d / "tok_fifo"
    shutil.copytree(TOKENIZER, fifo_tok)
    (fifo_tok / "tokenizer_config.json").unlink()
    os.mkfifo(fifo_tok / "tokenizer_config.json")
    yield "tokenizer folder", "tokenizer_config.json a FIFO", ["inspect-data", ds, "-t", fifo_tok], [ds]
    for name, kind in [("z.jsonl", "jsonl"), ("z.json", "json"), ("z.parquet", "parquet"), ("z.csv", "csv")]:
        (d / name).symlink_to("/dev/zero")
        yield f"dataset {kind}", "-> /dev/zero", ["inspect-data", d / name, "-t", tok], []
    os.mkfifo(d / "f.jsonl")
    yield "dataset jsonl", "a FIFO", ["inspect-data", d / "f.jsonl", "-t", tok], []
    yield "dataset", "/proc/self/mem", ["inspect-data", "/proc/self/mem", "-t", tok], []
    for fmt, name in [("wandb", "r.wandb"), ("tensorboard", "events.out.tfevents.1"), ("trainer-state", "ts.json"),
                      ("jsonl", "log.jsonl")]:
        (d / name).symlink_to("/dev/zero")
        yield f"check-run {fmt}", "-> /dev/zero", ["check-run", d / name, "--format", fmt], []
    msgs = d / "m.json"
    msgs.symlink_to("/dev/zero")
    yield "render -m", "messages -> /dev/zero", ["render", "-t", tok, "-m", msgs], []
    saved = d / "saved"
    subprocess.run([sys.executable, "-c", f"import datasets; datasets.Dataset.from_list({[OK]!r}).save_to_disk({str(saved)!r})"],
                   check=True, capture_output=True)
    state = json.loads((saved / "state.json").read_text())
    shutil.copy(saved / state["_data_files"][0]["filename"], d / "outside.arrow")
    state["_data_files"][0]["filename"] = "../outside.arrow"
    (saved / "state.json").write_text(json.dumps(state))
    yield "dataset save_to_disk", "state.json names ../outside.arrow", ["inspect-data", saved, "-t", tok], [saved]
    big = d / "bignum.jsonl"
    big.write_text(jsonl(OK, '{"messages": [], "n": ' + LONG + "}", OK))
    yield "dataset jsonl", "an integer of 5,000 digits", ["inspect-data", big, "-t", tok, "--all", "-f", "json"], [big]
    sur = d / "surrogate.json"
    sur.write_text('[{"messages": [{"role": "user", "content": "\\ud800"}, {"role": "assistant", "content": "4"}]}, '
                   + json.dumps(OK) + "]")
    yield "dataset json", "a lone surrogate", ["inspect-data", sur, "-t", tok, "--all", "-f", "json"], [sur]
    ids = d / "ids.jsonl"
    ids.write_text(jsonl('{"input_ids": [1, -1], "labels": [1, 2]}', '{"input_ids": [1, 1099511627776], "labels": [1, 2]}'))
    yield "dataset tokenized", "token ids -1 and 2^40", ["inspect-data", ids, "-t", tok, "--all", "-f", "json"], [ids]
    deep = d / "deep.json"
    deep.write_text("[" + json.dumps(OK) + ", " + "[" * 100_000 + "]" * 100_000 + "]")
    yield "dataset json", "an element nested 10^5 deep", ["inspect-data", deep, "-t", tok, "--all", "-f", "json"], [deep]
    bom = d / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + jsonl(OK).encode())
    yield "dataset jsonl", "a UTF-8 BOM", ["inspect-data", bom, "-t", tok, "-f", "json"], [bom]
    blank = d / "blank.jsonl"
    blank.write_text("\n" * 100_000 + jsonl(OK))
    yield "dataset jsonl", "100,000 leading blank lines", ["inspect-data", blank, "-t", tok, "-f", "json"], [blank]
    yield "inspect-data --rows", "0-99999999999999", ["inspect-data", ds, "-t", tok, "--rows", "0-99999999999999"], [ds]
    yield "inspect-data --sample", "-1", ["inspect-data", ds, "-t", tok, "--sample", "-1"], [ds]
    log = d / "trainer_log.jsonl"
    log.write_text(jsonl(*({"current_steps": s, "total_steps": 3, "loss": 1.0} for s in (1, 2, 3))))
    yield "check-run --watch", "--interval nan", ["check-run", log, "--watch", "--interval", "nan"], [log]
    empty = d / "trainer_state.json"
    empty.write_text('{"log_history": []}')
    yield "check-run trainer-state", '{"log_history": []}', ["check-run", empty], [empty]
    junk = d / "junk.wandb"
    junk.write_bytes(b":W&B\x00\x01\x00\x00" + bytes(range(256)) * 8)
    yield "check-run wandb", "junk after the header", ["check-run", junk], [junk]
    tfe = d / "events.out.tfevents.2"
    tfe.write_bytes(b"".join(tf_record(tf_event(s, tf_field(1, 5, b"\0\0\0\0") if s == 2 else tf_field(1, 2, b"loss")))
                             for s in (1, 2, 3)))
    yield "check-run tensorboard", "a tag of the wrong wire type", ["check-run", tfe, "-f", "json"], [tfe]
    db = d / "mlflow.db"
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE runs (run_uuid, name, status, start_time, lifecycle_stage);"
                      "CREATE TABLE metrics (key, value, timestamp, step, is_nan, run_uuid);"
                      "CREATE TABLE params (key, value, run_uuid); INSERT INTO runs VALUES ('r', 'r', 'FINISHED', 1, 'active');")
    con.executemany("INSERT INTO metrics VALUES (?, ?, 0, ?, 0, 'r')", [("loss", 1.0, 1), ("loss", 1.0, 2), ("loss", 1.0, float("inf"))])
    con.commit()
    con.close()
    yield "check-run mlflow.db", "a step of Inf", ["check-run", db, "-f", "json"], [db]
    toml_dir = d / "tomldir"
    toml_dir.mkdir()
    (toml_dir / "mldebug.toml").write_text("[checks.loss-spike]\nsigma = nan\n")
    yield "mldebug.toml", "sigma = nan", ["check-run", log, "--config-dir-marker", toml_dir], [toml_dir]
    esc = d / "esc.jsonl"
    esc.write_text(jsonl({"messages": [{"role": "user", "content": "\x1b]0;title\x07\x1b[2J\n::set-env name=X::1"},
                                       {"role": "assistant", "content": "4"}]}))
    for fmt in ("text", "github", "markdown"):
        yield f"inspect-data -f {fmt}", "ESC/OSC/BEL and ::set-env in content", ["inspect-data", esc, "-t", tok, "-f", fmt,
                                                                                  "--rows", "0"], [esc]
    lr = d / "lr.yaml"
    lr.write_text("learning_rate: 2.0e-5\nper_device_train_batch_size: 16\nlr_scheduler_type: cosine\nwarmup_steps: 100\n"
                  "max_steps: 1000000000\n")
    yield "lr-plot", "max_steps: 1000000000", ["lr-plot", "-c", lr, "-f", "json", "-o", d / "lr.json"], [lr]
    small = d / "lr_small.yaml"  # the baseline: the same command's fixed cost (transformers' config schema)
    small.write_text(lr.read_text().replace("1000000000", "100"))
    yield "lr-plot", "baseline: max_steps: 100", ["lr-plot", "-c", small, "-f", "json", "-o", d / "lr_small.json"], [small]
    wide = d / "wide.csv"
    wide.write_text("Step," + ",".join(f"m{i}" for i in range(10**6)) + "\n" + "1," + ",".join("1" for _ in range(10**6)) + "\n")
    yield "check-run csv", "10^6 columns", ["check-run", wide, "-f", "json", "-o", d / "wide.json"], [wide]
    wide_ds = d / "wide_ds.csv"
    shutil.copy(wide, wide_ds)
    yield "dataset csv", "10^6 columns", ["inspect-data", wide_ds, "-t", tok], [wide_ds]
    mf = d / "Modelfile"
    mf.write_text('FROM llama3:8b\nTEMPLATE """' + "{{ .Prompt }}" * 10**6 + '"""\n')
    yield "render --modelfile", "TEMPLATE of 10^6 actions", ["render", "--modelfile", mf, "-m", d / "ok_messages.json",
                                                             "-e", "ollama"], [mf]
    (d / "ok_messages.json").write_text(json.dumps(OK["messages"]))


QWEN_CONFIG = ROOT / "fixtures" / "memory-models" / "qwen2.5-0.5b" / "config.json"
SECRET = "SECRET-NEVER-SHOWN"


def _model(folder: Path, extra: str, tokenizer: bool = False) -> Path:
    """A real model config.json with ``extra`` JSON appended (the last duplicate key wins, as in transformers)."""
    if tokenizer:
        shutil.copytree(TOKENIZER, folder)
    else:
        folder.mkdir()
    text = QWEN_CONFIG.read_text().rstrip().rstrip("}").rstrip()
    (folder / "config.json").write_text(f"{text},\n  {extra}\n}}\n")
    return folder


def _gguf_template(path: Path, template: str) -> Path:
    import gguf

    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(["a", "b", "<|im_end|>", "<|endoftext|>"])
    writer.add_token_types([1, 1, 3, 3])
    writer.add_eos_token_id(2)
    writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def third_pass_cases(d: Path, with_probe: bool = True):
    """Issue 36's cases: (reader/format, hostile input, argv, inputs to keep unchanged, text never to show)."""
    tok = TOKENIZER
    d.mkdir(parents=True, exist_ok=True)
    rows = d / "rows.json"
    rows.write_text(json.dumps([OK]))
    msgs = d / "msgs.json"
    msgs.write_text(json.dumps([{"role": "user", "content": "a\nb\nc"}]))

    def train(name: str, model: Path | str) -> Path:
        path = d / name
        path.write_text(f"model_name_or_path: {model}\ndataset_name: rows.json\noutput_dir: out\nreport_to: none\n"
                        "max_length: 48\nper_device_train_batch_size: 4\nlearning_rate: 0.0002\n")
        return path

    lr = d / "power_nan.yaml"
    lr.write_text("learning_rate: 0.0001\nlr_scheduler_type: polynomial\nlr_scheduler_kwargs: {power: .nan}\n"
                  "max_steps: 100\nwarmup_steps: 10\n")
    yield "lr-plot", "lr_scheduler_kwargs {power: NaN}", ["lr-plot", "-c", lr], [lr], None
    lr_nan = d / "lr_nan.yaml"
    lr_nan.write_text("learning_rate: .nan\nnum_train_epochs: .inf\nper_device_train_batch_size: 0\n")
    yield "lr-plot", "learning_rate NaN, epochs Inf", ["lr-plot", "-c", lr_nan, "--num-rows", "100"], [lr_nan], None
    for name, extra in (("experts", '"num_experts": 1e9'), ("layers", '"num_hidden_layers": 1e999'),
                        ("heads", '"num_attention_heads": 0'), ("vocab", '"vocab_size": ' + "9" * 4000)):
        folder = _model(d / f"model-{name}", extra)
        yield "memory config.json", extra[:40], ["memory", train(f"m-{name}.yaml", folder), "--model", folder], [folder], None
    ok_model = _model(d / "model-ok", '"num_hidden_layers": 2')
    yield "memory", "--gpu-memory nan", ["memory", train("m-ok.yaml", ok_model), "--model", ok_model,
                                         "--gpu-memory", "nan"], [ok_model], None
    deep = d / "deep.jinja"
    deep.write_text("{% if true %}" * 5000 + "x" + "{% endif %}" * 5000)
    big = d / "big.jinja"
    big.write_text("x" * 18_000_000)
    for engine in ("transformers", "llamacpp", "tgi", "vllm-completions"):
        yield f"render -e {engine}", "5,000-deep {% if %}", ["render", "-m", msgs, "-t", tok, "--template", deep,
                                                            "-e", engine], [deep], None
    yield "render -e transformers", "18 MB Jinja template", ["render", "-m", msgs, "-t", tok, "--template", big], [big], None
    gguf_indent = _gguf_template(d / "indent.gguf", '{% for m in messages %}{{ m["content"] | indent(10**9) }}'
                                                    "{% endfor %}")
    yield "check-template --deploy gguf", "indent(10**9)", ["check-template", "--train", tok, "--deploy",
                                                             gguf_indent], [gguf_indent], None
    garbage = d / "garbage.json"
    garbage.write_text(json.dumps([OK]) + "\ngarbage{{{\n")
    yield "dataset json", "array + trailing garbage", ["inspect-data", garbage, "-t", tok], [garbage], None
    (d / "loop_a.jsonl").symlink_to(d / "loop_b.jsonl")
    (d / "loop_b.jsonl").symlink_to(d / "loop_a.jsonl")
    yield "dataset", "symlink loop", ["inspect-data", d / "loop_a.jsonl", "-t", tok], [], None
    surrogate = d / "surrogate.json"
    surrogate.write_text('[{"role": "user", "content": "a\\ud800b"}]')
    yield "check-template -m", "lone surrogate", ["check-template", "--train", tok, "--deploy", tok, "-m", surrogate], \
        [surrogate], None
    ids = d / "ids.jsonl"
    ids.write_text(jsonl({**OK, "input_ids": [1, 2, 999_999_999]}))
    yield "inspect-data --tokens", "id past the vocabulary", ["inspect-data", ids, "-t", tok, "--tokens", "--rows", "0"], \
        [ids], None
    mask = d / "mask.json"
    mask.write_text(json.dumps([{"role": "user", "content": "::add-mask::x\r::error::y"}]))
    yield "render (GitHub Actions)", "::add-mask:: in content", ["render", "-m", mask, "-t", tok], [mask], None
    yield "inspect-data --engine ray", "--ray-concurrency 10**9", ["inspect-data", rows, "-t", tok, "--engine", "ray",
                                                                    "--ray-concurrency", str(10**9)], [rows], None
    outside = Path(tempfile.mkdtemp(prefix="mldebug-outside-"))  # outside every working folder a runner uses
    (outside / "secret.jinja").write_text(SECRET)
    shutil.copy(QWEN_CONFIG, outside / "config.json")
    linked = d / "linked-tok"
    shutil.copytree(tok, linked)
    (linked / "chat_template.jinja").symlink_to(outside / "secret.jinja")
    yield "render tokenizer folder", "chat_template.jinja -> outside", ["render", "-m", msgs, "-t", linked], [linked], SECRET
    yield "memory", "config names a model outside", ["memory", train("m-outside.yaml", outside)], [outside], "qwen2"
    yield from _third_pass_readers(d, tok, msgs, rows)
    if with_probe:
        evil = _model(d / "evil", '"model_type": "evilmodel", "auto_map": {"AutoConfig": "configuration_evil.C", '
                                  '"AutoModelForCausalLM": "modeling_evil.M"}', tokenizer=True)
        for name in ("configuration_evil", "modeling_evil"):
            (evil / f"{name}.py").write_text(f"open({str(d / 'CODE-RAN')!r}, 'a').write('ran')\n")
        yield "probe", "auto_map + unknown model_type", ["probe", train("p-evil.yaml", evil), "--model", evil], [evil], \
            "Do you wish to run"
        layers = _model(d / "layers", '"num_hidden_layers": 1000000', tokenizer=True)
        yield "probe", "num_hidden_layers 1e6", ["probe", train("p-layers.yaml", layers), "--model", layers], [layers], None


def _third_pass_readers(d: Path, tok: Path, msgs: Path, rows: Path):
    """Issue 36's remaining readers: Parquet row groups, GGUF string arrays, line bounds, remote URIs, globs, flags."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    chat = pa.array([[{"role": "user", "content": "x" * (10 * 2**20)}, {"role": "assistant", "content": "4"}]])
    bomb = d / "bomb.parquet"
    pq.write_table(pa.table({"messages": pa.chunked_array([chat] * 60)}), bomb, row_group_size=1000, compression="zstd")
    yield "dataset parquet", "629 MB row group in a 25 KB file", ["inspect-data", bomb, "-t", tok], [bomb], None
    vocab = d / "vocab.gguf"
    key = b"tokenizer.ggml.tokens"
    with open(vocab, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key
                 + struct.pack("<IIQ", 9, 8, 2**22 + 1) + b"\0" * 8 * (2**22 + 1))
    yield "render --gguf", "4,194,305 vocabulary strings", ["render", "--gguf", vocab, "-m", msgs], [vocab], None
    blank = d / "blank_run.jsonl"
    blank.write_bytes(b"\n" * 1_000_001 + json.dumps(OK).encode() + b"\n")
    yield "dataset jsonl", "1,000,001 blank lines", ["inspect-data", blank, "-t", tok], [blank], None
    long_log = d / "long_line" / "trainer_log.jsonl"
    long_log.parent.mkdir()
    long_log.write_bytes(b'{"current_steps": 1, "total_steps": 3, "loss": 1.0}\n' + b"x" * (16 * 2**20))
    yield "check-run jsonl", "16 MiB last line, no newline", ["check-run", long_log, "-f", "json"], [long_log], None
    loops = d / "loops"
    (loops / "sub").mkdir(parents=True)
    (loops / "sub" / "a.jsonl").write_text(jsonl(OK))
    for i in range(8):
        (loops / f"x{i}").symlink_to(".")
    yield "dataset glob", "** through 8 links x -> .", ["inspect-data", f"{loops}/**/*.jsonl", "-t", tok], [loops], None
    outside = Path(tempfile.mkdtemp(prefix="mldebug-outside-"))
    (outside / "secret.jsonl").write_text(jsonl({"messages": [{"role": "user", "content": SECRET},
                                                              {"role": "assistant", "content": "4"}]}))
    linked = d / "linked-shards"
    linked.mkdir()
    (linked / "a.jsonl").write_text(jsonl(OK))
    (linked / "b.jsonl").symlink_to(outside / "secret.jsonl")
    yield "dataset shards", "a shard linked outside", ["inspect-data", linked, "-t", tok, "--rows", "0-1"], [linked], \
        SECRET
    yield "dataset gs://", "offline, not asked", ["inspect-data", "gs://mldebug-no-bucket/d/*.parquet", "-t", tok], [], None
    yield "lr-plot --num-rows", "nan", ["lr-plot", "-c", rows, "--num-rows", "nan"], [rows], None
    yield "memory --world-size", "-1", ["memory", rows, "--world-size", "-1"], [rows], None
    yield "inspect-data --workers", "10**12", ["inspect-data", rows, "-t", tok, "--workers", str(10**12)], [rows], None


def digest(paths) -> dict:
    files = [f for p in paths for f in ([p] if p.is_file() else sorted(p.rglob("*"))) if f.is_file() and not f.is_symlink()
             and not str(f).startswith("/dev")]
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


def run(argv, cwd: Path) -> tuple[int, str, str, float, int | None]:
    started = time.monotonic()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "GITHUB_ACTIONS": "true"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, *map(str, argv)], capture_output=True, text=True, env=env,
                              cwd=cwd, timeout=300, errors="replace")
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after 300 s", time.monotonic() - started, None
    err, found, peak = done.stderr.rpartition("PEAK_KIB ")
    return done.returncode, done.stdout, (err if found else done.stderr), time.monotonic() - started, \
        (int(peak) // 1024 if found else None)


def outcome(code: int, stdout: str, stderr: str) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.startswith("Error:")]
    if "Traceback" in stderr:
        return "TRACEBACK"
    if lines:
        return lines[0][:110]
    try:
        report = json.loads(stdout)
        codes = sorted({f["code"] for f in report.get("findings", [])})
        return "findings " + (", ".join(codes) or "none")
    except ValueError:
        return (stdout.strip().splitlines() or [""])[-1][:80] or "(no output)"


def _workflow_command(stdout: str) -> bool:
    """A workflow command that came from the data (mldebug's own annotations are ``::error file=...``)."""
    return any(line.lstrip().startswith(("::add-mask", "::set-env", "::error::", "::stop-commands"))
               for line in stdout.replace("\r", "\n").splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="substrings of the cases to run")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--third-pass", action="store_true", help="only issue 36's cases")
    args = parser.parse_args()
    rows = []
    tally = dict.fromkeys(("code executed", "inputs modified", "hangs", "memory >= 2 GiB", "raw control bytes",
                           "workflow commands", "outside files shown", "exit 2 without Error:", "internal errors",
                           "tracebacks"), 0)
    with tempfile.TemporaryDirectory(prefix="mldebug-hostile-") as scratch:
        d = Path(scratch)
        third = list(third_pass_cases(d / "third-pass"))
        first = [] if args.third_pass else [(*c, None) for c in cases(d)]
        for reader, hostile, argv, keep, secret in first + third:
            if args.only and not any(o in f"{reader} {hostile}" for o in args.only):
                continue
            cwd = d
            if "--config-dir-marker" in argv:  # mldebug.toml is found from the working folder
                cwd = Path(argv.pop(argv.index("--config-dir-marker") + 1))
                argv.remove("--config-dir-marker")
            before = digest(keep)
            code, out, err, seconds, peak = run(argv, cwd)
            kept = digest(keep) == before
            raw = bool(RAW_CONTROL.search(out.replace("\x1b[", "")) or RAW_CONTROL.search(err))
            result = outcome(code, out, err)
            tally["code executed"] += (d / "third-pass" / "CODE-RAN").exists()
            tally["inputs modified"] += not kept
            tally["hangs"] += code == -1
            tally["memory >= 2 GiB"] += (peak or 0) >= 2048
            tally["raw control bytes"] += raw
            tally["workflow commands"] += _workflow_command(out)
            tally["outside files shown"] += secret is not None and secret in out + err
            tally["exit 2 without Error:"] += code == 2 and not any(line.startswith("Error:") for line in err.splitlines())
            tally["internal errors"] += "internal error" in err
            tally["tracebacks"] += result == "TRACEBACK"
            rows.append((reader, hostile, code, result, kept, raw, seconds, peak))
            print(f"{reader:26} {hostile:38} exit {code:>2}  {seconds:6.1f} s {peak or 0:6} MiB  "
                  f"{'inputs kept' if kept else 'INPUT CHANGED'}{'  RAW CONTROL BYTE' if raw else ''}  {rows[-1][3]}",
                  flush=True)
    clean = sum(1 for r in rows if r[2] in (0, 1, 2) and r[4] and not r[5] and r[3] != "TRACEBACK")
    print(f"\n{clean} of {len(rows)} cases: exit 0/1/2, no traceback, inputs unchanged, no raw control byte")
    print("; ".join(f"{name}: {n}" for name, n in tally.items()))
    worst = sorted(rows, key=lambda r: -(r[7] or 0))[:3]
    print("largest peak memory: " + "; ".join(f"{r[0]} / {r[1]}: {r[7]} MiB, {r[6]:.1f} s" for r in worst))
    if args.markdown:
        print("\n| reader/format | hostile input | exit | outcome | s | MiB |\n|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3].replace('|', '/')} | {r[6]:.1f} | {r[7]} |")
    return 0 if clean == len(rows) and not any(tally.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
