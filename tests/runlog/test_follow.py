"""--watch reads growing logs incrementally: only what was appended is parsed, a half-written line waits.

Each test rewrites bytes already read, in place and at the same length, before appending: a follower that
re-read the file would see the change, an incremental one keeps the values it read first.
"""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from mldebug_cli.sources.runlog import read_run
from mldebug_cli.sources.runlog.follow import Follower
from support import RUNS, tf_event, tf_field, tf_record


def overwrite(path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new, 1))


def append(path, data: bytes) -> None:
    with path.open("ab") as stream:
        stream.write(data)


def jsonl_row(step: int, loss: float) -> bytes:
    return (json.dumps({"current_steps": step, "total_steps": 10, "loss": loss, "lr": 1e-4}) + "\n").encode()


def test_jsonl_is_followed_from_where_it_stopped(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 2.5 - s / 10) for s in (1, 2, 3)))
    follower = Follower(path)
    assert follower.poll().get("loss").values.tolist() == [2.4, 2.3, 2.2]
    overwrite(path, b'"loss": 2.4', b'"loss": 9.4')
    half = jsonl_row(6, 1.9)
    append(path, jsonl_row(4, 2.1) + jsonl_row(5, 2.0) + half[:20])
    run = follower.poll()
    assert run.get("loss").values.tolist() == [2.4, 2.3, 2.2, 2.1, 2.0]  # line 1 was not read again
    assert not run.notes  # a line still being written is not a truncated record
    append(path, half[20:])
    run = follower.poll()
    assert list(run.get("loss").steps) == [1, 2, 3, 4, 5, 6] and run.get("loss").line(5) == 6
    assert run.meta["max_steps"] == 10


def test_torchtune_log_is_followed(tmp_path):
    (source,) = (RUNS / "torchtune-sft").glob("log_*.txt")
    lines = source.read_bytes().splitlines(keepends=True)
    path = tmp_path / source.name
    path.write_bytes(b"".join(lines[:10]))
    follower = Follower(tmp_path)
    assert len(follower.poll().get("loss")) == 10
    overwrite(path, lines[0][:12], b"Step 1 | los")  # same bytes: the line is as written
    first = lines[0].split(b"loss:")[1].split(b" ")[0]
    overwrite(path, b"loss:" + first, b"loss:" + b"7" * len(first))
    append(path, b"".join(lines[10:20]) + lines[20][:15])
    assert len(follower.poll().get("loss")) == 20
    append(path, lines[20][15:] + b"".join(lines[21:]))
    run, whole = follower.poll(), read_run(source)
    assert run.get("loss").values[0] == whole.get("loss").values[0]  # the rewritten bytes were never re-read
    assert run.get("grad_norm").values.tolist() == whole.get("grad_norm").values.tolist()


def test_mlflow_metric_files_are_followed_and_new_metrics_found(tmp_path):
    (experiment,) = [p for p in (RUNS / "sft-mlflow" / "mlruns").iterdir() if p.is_dir() and p.name != "0"]
    (source,) = [p for p in experiment.iterdir() if p.is_dir()]
    run_dir = tmp_path / "run"
    shutil.copytree(source, run_dir)
    loss = (run_dir / "metrics" / "loss").read_bytes().splitlines(keepends=True)
    (run_dir / "metrics" / "loss").write_bytes(b"".join(loss[:2]))
    eval_loss = (run_dir / "metrics" / "eval_loss").read_bytes()
    (run_dir / "metrics" / "eval_loss").unlink()
    follower = Follower(run_dir)
    run = follower.poll()
    assert len(run.get("loss")) == 2 and run.get("eval_loss") is None
    append(run_dir / "metrics" / "loss", b"".join(loss[2:]))
    (run_dir / "metrics" / "eval_loss").write_bytes(eval_loss)
    run, whole = follower.poll(), read_run(source)
    for key in ("loss", "eval_loss", "grad_norm"):
        assert list(run.get(key).steps) == list(whole.get(key).steps)
        assert run.get(key).values.tolist() == whole.get(key).values.tolist()
    assert run.meta["max_steps"] == 12


def test_tensorboard_records_are_followed(tmp_path):
    path = tmp_path / "events.out.tfevents.1.host"
    header = tf_record(tf_field(1, 1, b"\0" * 8) + tf_field(3, 2, b"brain.Event:2"))
    records = [tf_record(tf_event(s, "train/loss", 3.0 - s / 4, tensor=False)) for s in range(1, 7)]
    path.write_bytes(header + b"".join(records[:2]))
    follower = Follower(path)
    assert follower.poll().get("loss").values.tolist() == [2.75, 2.5]
    append(path, b"".join(records[2:5]) + records[5][:10])
    run = follower.poll()
    assert list(run.get("loss").steps) == [1, 2, 3, 4, 5] and not run.notes  # the cut record waits
    append(path, records[5][10:])
    assert list(follower.poll().get("loss").steps) == [1, 2, 3, 4, 5, 6]


def test_console_follows_while_the_bar_counts_steps_then_reads_whole(tmp_path):
    path = tmp_path / "train.log"

    def logged(step: int, loss: float, bar: bool = True) -> bytes:
        return ((f" {step}/40 [00:01<00:10]\n" if bar else "") + f"{{'loss': {loss}, 'epoch': {step / 40}}}\n").encode()

    path.write_bytes(logged(5, 2.5) + logged(10, 2.25))
    follower = Follower(path)
    assert list(follower.poll().get("loss").steps) == [5, 10]
    overwrite(path, b"'loss': 2.5,", b"'loss': 9.5,")
    append(path, logged(15, 2.0))
    run = follower.poll()
    assert list(run.get("loss").steps) == [5, 10, 15] and run.get("loss").values[0] == 2.5
    append(path, logged(20, 1.75, bar=False))  # buffered output from here: steps need the whole file
    run = follower.poll()
    assert run.get("loss").values.tolist() == [9.5, 2.25, 2.0, 1.75] and "no-step" in {n.kind for n in run.notes}


def test_watch_prints_each_finding_once_as_the_log_grows(tmp_path, monkeypatch):
    from mldebug_cli.cli import app
    from mldebug_cli.cli import check_run as command

    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 3.0 - s / 20) for s in range(1, 31)))
    growth = [b"".join(jsonl_row(s, 0.0) for s in range(31, 36)), b"".join(jsonl_row(s, 0.0) for s in range(36, 41))]

    def sleep(_seconds):
        if not growth:
            raise KeyboardInterrupt
        append(path, growth.pop(0))

    monkeypatch.setattr(command.time, "sleep", sleep)
    result = CliRunner().invoke(app, ["check-run", str(path), "--watch", "--interval", "0", "-f", "json"])
    streamed = [line for line in result.stdout.splitlines() if line.startswith(("error ", "warning ", "info "))]
    assert [line.split(":")[0] for line in streamed] == ["error RN001 zero-loss"]  # found at 31-35, not again at 31-40
    assert "steps 31-35" in streamed[0]
    report = json.loads(result.stdout[result.stdout.index("{"):])
    (zero,) = [f for f in report["findings"] if f["code"] == "RN001"]
    assert zero["location"]["step_end"] == 40 and result.exit_code == 1


def test_a_trainer_state_rewritten_at_each_save_is_read_whole(tmp_path):
    path = tmp_path / "trainer_state.json"
    shutil.copyfile(RUNS / "sft-overfit-16-rows" / "trainer_state.json", path)
    follower = Follower(tmp_path)
    assert not follower.incremental and len(follower.poll().get("loss")) == 16
    shutil.copyfile(RUNS / "sft-healthy" / "trainer_state.json", path)
    assert follower.poll().get("loss").values.tolist() == read_run(path).get("loss").values.tolist()
