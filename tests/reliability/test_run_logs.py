"""Run logs: an empty or unreadable log is an error, never "No findings"; --watch follows the file by identity."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from mldebug_cli.sources.runlog.follow import Follower
from outcomes import assert_one_line_error, run_cli, unchanged

HINT = "check that this is the run's log, and that the run logged at least one step"


def jsonl_row(step: int, loss: float) -> bytes:
    return (json.dumps({"current_steps": step, "total_steps": 40, "loss": loss, "lr": 1e-4}) + "\n").encode()


def test_an_empty_log_history_is_an_error(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"log_history": []}')
    with unchanged(path):
        result = run_cli("check-run", path)
    assert_one_line_error(result.exit_code, result.stderr, f"{path}: no metric was read from this trainer-state log", HINT)


def test_a_wandb_log_of_junk_after_its_header_is_an_error(tmp_path):
    path = tmp_path / "run-1.wandb"
    path.write_bytes(b":W&B\x00\x01\x00\x00" + bytes(range(256)) * 8)
    with unchanged(path):
        result = run_cli("check-run", path)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {path}: no metric was read from this wandb log (")
    assert "No findings" not in result.stdout


def test_a_utf8_bom_before_a_trainer_state_is_read(tmp_path):
    path = tmp_path / "trainer_state.json"
    history = [{"step": s, "loss": 2.0 - s / 10, "learning_rate": 1e-4} for s in range(1, 6)]
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"log_history": history, "global_step": 5}).encode())
    result = run_cli("check-run", path, "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["series"]["loss"]["points"] == 5


def test_a_log_truncated_under_watch_is_read_again_from_its_start(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 3.0) for s in (1, 2, 3, 4)))
    follower = Follower(path)
    assert list(follower.poll().get("loss").steps) == [1, 2, 3, 4]
    with path.open("r+b") as stream:  # truncated in place (same inode), then a new run writes
        stream.truncate(0)
        stream.write(b"".join(jsonl_row(s, 1.0) for s in (1, 2)))
    run = follower.poll()
    assert list(run.get("loss").steps) == [1, 2] and run.get("loss").values.tolist() == [1.0, 1.0]
    assert [n.kind for n in run.notes if n.kind == "restart"] == ["restart"]
    assert "was truncated" in next(n.message for n in run.notes if n.kind == "restart")


def test_a_log_replaced_by_rename_under_watch_is_read_from_the_new_files_start(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 3.0) for s in (1, 2)))
    follower = Follower(path)
    assert list(follower.poll().get("loss").steps) == [1, 2]
    new = tmp_path / "new.jsonl"
    new.write_bytes(b"".join(jsonl_row(s, 0.5) for s in (1, 2, 3, 4, 5)))  # longer: an offset kept would lose 1-2
    os.replace(new, path)
    run = follower.poll()
    assert list(run.get("loss").steps) == [1, 2, 3, 4, 5] and set(run.get("loss").values.tolist()) == {0.5}
    assert "was replaced by a new file" in next(n.message for n in run.notes if n.kind == "restart")


def test_a_log_deleted_under_watch_ends_the_watch_with_exit_2(tmp_path, monkeypatch):
    from mldebug_cli.cli import app
    from mldebug_cli.cli import check_run as command

    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 2.0) for s in range(1, 6)))
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        if len(sleeps) == 1:
            path.unlink()
        if len(sleeps) > 10:
            raise AssertionError("the watch did not end")

    monkeypatch.setattr(command.time, "sleep", sleep)
    result = CliRunner().invoke(app, ["check-run", str(path), "--watch", "--interval", "5"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == (f"Error: {path}: the log is gone ({command.GONE_READS} reads in a "
                                                      "row found no file); the watch ends")
    assert len(sleeps) == command.GONE_READS  # one read with the log, then the grace reads


@pytest.mark.parametrize("columns", [20_000])
def test_a_run_log_csv_of_many_columns_reads_the_first_ten_thousand(tmp_path, columns):
    path = tmp_path / "history.csv"
    header = "Step," + ",".join(f"m{i}" for i in range(columns))
    path.write_text(header + "\n" + "".join(f"{s}," + ",".join("1.0" for _ in range(columns)) + "\n" for s in (1, 2)))
    result = run_cli("check-run", path, "-f", "json")
    report = json.loads(result.stdout)
    assert len(report["series"]) == 10_000
    assert any(f"the CSV has {columns:,} metric columns; the first 10,000 were read" in f["message"]
               for f in report["findings"] if f["code"] == "RN012")


def test_a_run_folder_file_linking_outside_the_folder_is_refused(tmp_path):
    outside = tmp_path / "secret" / "events.out.tfevents.1.host"
    outside.parent.mkdir()
    outside.write_bytes(b"not an event file")
    run = tmp_path / "run"
    run.mkdir()
    (run / "events.out.tfevents.1.host").symlink_to(outside)
    for fmt in ("tensorboard", None):
        result = run_cli("check-run", run, *(("--format", fmt) if fmt else ()))
        assert_one_line_error(result.exit_code, result.stderr, f"{run / 'events.out.tfevents.1.host'}: a link to "
                              f"{outside}, outside the folder {run}")


def test_watch_says_when_the_log_was_replaced(tmp_path, monkeypatch):
    from mldebug_cli.cli import app
    from mldebug_cli.cli import check_run as command

    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 2.0) for s in range(1, 6)))
    steps = []

    def sleep(_seconds):
        steps.append(1)
        if len(steps) == 1:
            new = tmp_path / "new.jsonl"
            new.write_bytes(b"".join(jsonl_row(s, 1.0) for s in range(1, 3)))
            os.replace(new, path)
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr(command.time, "sleep", sleep)
    result = CliRunner().invoke(app, ["check-run", str(path), "--watch", "--interval", "1", "-f", "json"])
    streamed = [line for line in result.stdout.splitlines() if line.startswith("info RN012")]
    assert any(f"{path} was replaced by a new file; read again from its start" in line for line in streamed), result.stdout


@pytest.mark.parametrize(("replacement", "kind"), [("fifo", "a FIFO"), ("zero", "a character device")])
def test_a_log_replaced_under_watch_by_a_fifo_or_a_device_ends_the_watch(tmp_path, monkeypatch, replacement, kind):
    from mldebug_cli.cli import app
    from mldebug_cli.cli import check_run as command

    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(b"".join(jsonl_row(s, 2.0) for s in range(1, 6)))
    sleeps = []

    def sleep(_seconds):
        sleeps.append(1)
        if len(sleeps) == 1:
            path.unlink()
            os.mkfifo(path) if replacement == "fifo" else path.symlink_to("/dev/zero")
        if len(sleeps) > 10:
            raise AssertionError("the watch did not end")

    monkeypatch.setattr(command.time, "sleep", sleep)
    result = CliRunner().invoke(app, ["check-run", str(path), "--watch", "--interval", "5"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1] == f"Error: {path}: not a regular file ({kind}); the watch ends"
    assert len(sleeps) == 1
