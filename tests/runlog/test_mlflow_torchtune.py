"""The MLflow (file store, mlflow.db) and torchtune readers on logs the real MLflowCallback and DiskLogger wrote."""

from __future__ import annotations

import math
import shutil
import sqlite3

import pytest

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.sources.runlog import detect, read_run
from mldebug_cli.sources.runlog.model import PREFERENCE, SFT
from support import RUNS

MLFLOW = RUNS / "sft-mlflow"
MLRUNS = MLFLOW / "mlruns"
DB = MLFLOW / "mlflow.db"
(EXPERIMENT,) = [p for p in MLRUNS.iterdir() if p.is_dir() and p.name != "0"]
(RUN_FOLDER,) = [p for p in EXPERIMENT.iterdir() if p.is_dir()]
TORCHTUNE_SFT = RUNS / "torchtune-sft"
TORCHTUNE_DPO = RUNS / "torchtune-dpo"
SERIES = ("loss", "eval_loss", "grad_norm", "learning_rate")


def run_folder(tmp_path, name: str, start_time: int, lines: dict[str, str]):
    folder = tmp_path / "mlruns" / "1" / name
    (folder / "metrics").mkdir(parents=True)
    (tmp_path / "mlruns" / "1" / "meta.yaml").write_text("experiment_id: '1'\nname: e\n")
    (folder / "meta.yaml").write_text(f"run_id: {name}\nrun_name: run-{name}\nstart_time: {start_time}\nstatus: 3\n"
                                      "lifecycle_stage: active\n")
    for key, text in lines.items():
        path = folder / "metrics" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# --- MLflow file store ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("where", [MLRUNS, EXPERIMENT, RUN_FOLDER], ids=["mlruns", "experiment", "run"])
def test_file_store_matches_the_same_runs_trainer_state(where):
    assert detect(where) == ("mlflow", where)
    run = read_run(where)
    state = read_run(MLFLOW / "trainer_state.json")  # the same seeded run, logged by the Trainer itself
    assert run.format == "mlflow" and run.kind == SFT
    for key in SERIES:
        assert list(run.get(key).steps) == list(state.get(key).steps), key
        assert list(run.get(key).values) == list(state.get(key).values), key
    assert run.meta["mlflow_status"] == "finished" and run.meta["max_steps"] == 12
    assert run.meta["train_loss"] == state.meta["train_loss"]  # the final entry is metadata, not a series
    assert "train_loss" not in run.series and not run.notes


def test_a_folder_holding_only_mlruns_is_an_mlflow_store_and_a_metric_file_is_its_run(tmp_path):
    shutil.copytree(MLRUNS, tmp_path / "mlruns")
    assert detect(tmp_path) == ("mlflow", tmp_path / "mlruns")
    assert detect(RUN_FOLDER / "metrics" / "loss") == ("mlflow", RUN_FOLDER)


def test_file_store_oddities_are_notes_not_crashes(tmp_path):
    folder = run_folder(tmp_path, "a1", 1, {
        "loss": "1700000000000 2.5 1\n1700000000001 nan 2\nnot a metric line\n1700000000002 inf 3\n1700000000003 2.",
        "rewards/chosen": "1700000000000 0.5 1\n1700000000000 0.25\n",  # nested key; a 2-field line is step 0
    })
    run = read_run(folder)
    loss = run.get("loss")
    assert list(loss.steps) == [1, 2, 3] and loss.values[0] == 2.5
    assert math.isnan(loss.values[1]) and loss.values[2] == math.inf
    assert list(run.get("rewards/chosen").steps) == [0, 1]
    assert {n.kind for n in run.notes} >= {"bad-record", "truncated", "restart"}


def test_several_runs_read_the_newest_and_say_so_or_the_one_asked_for(tmp_path):
    run_folder(tmp_path, "old0001", 1000, {"loss": "1 3.0 1\n1 2.0 2\n"})
    run_folder(tmp_path, "new0002", 2000, {"loss": "1 1.0 1\n"})
    newest = read_run(tmp_path / "mlruns")
    assert newest.meta["mlflow_run_id"] == "new0002" and newest.get("loss").values.tolist() == [1.0]
    (note,) = [n for n in newest.notes if n.kind == "several-runs"]
    assert "2 MLflow runs" in note.message and "--run-id" in note.message
    chosen = read_run(tmp_path / "mlruns", run_id="old")
    assert chosen.get("loss").values.tolist() == [3.0, 2.0]
    with pytest.raises(InputError, match="no MLflow run matches --run-id 'zzz'"):
        read_run(tmp_path / "mlruns", run_id="zzz")
    with pytest.raises(UsageError, match="--run-id"):
        read_run(TORCHTUNE_SFT, run_id="old")


# --- mlflow.db ----------------------------------------------------------------------------------------------------

def test_database_matches_the_same_runs_trainer_state():
    assert detect(DB) == ("mlflow", DB)
    run = read_run(DB)
    state = read_run(MLFLOW / "trainer_state.json")
    for key in SERIES:
        assert list(run.get(key).steps) == list(state.get(key).steps), key
        assert list(run.get(key).values) == list(state.get(key).values), key
    assert run.meta["mlflow_status"] == "finished" and run.meta["max_steps"] == 12 and not run.notes


def test_database_nan_and_inf_as_mlflow_stores_them(tmp_path):
    path = tmp_path / "mlflow.db"
    shutil.copyfile(DB, path)
    with sqlite3.connect(path) as connection:
        (run_uuid,) = connection.execute("SELECT run_uuid FROM runs").fetchone()
        connection.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES "
                               "(?, ?, 1, ?, ?, ?)", [("loss", 0.0, run_uuid, 14, 1),
                                                      ("loss", 1.7976931348623157e308, run_uuid, 16, 0)])
    loss = read_run(path).get("loss")
    assert list(loss.steps[-2:]) == [14, 16] and math.isnan(loss.values[-2]) and loss.values[-1] == math.inf


def one_line(error) -> str:
    text = str(error.value)
    assert "\n" not in text
    return text


def test_corrupt_foreign_and_locked_databases_are_one_line_errors(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(DB.read_bytes()[:100] + b"\xff" * 5000)
    with pytest.raises(InputError) as error:
        read_run(corrupt)
    assert "corrupt.db" in one_line(error)
    foreign = tmp_path / "other.db"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError) as error:
        read_run(foreign)
    assert "without MLflow's metrics and runs tables" in one_line(error)
    locked = tmp_path / "mlflow.db"
    shutil.copyfile(DB, locked)
    writer = sqlite3.connect(locked, isolation_level=None)
    writer.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError) as error:
            read_run(locked)
        assert "locked" in one_line(error)
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_corrupt_database_is_one_line_error_on_the_command_line(tmp_path):
    from typer.testing import CliRunner

    from mldebug_cli.cli import app

    corrupt = tmp_path / "mlflow.db"
    corrupt.write_bytes(DB.read_bytes()[:4096] + b"\x00junk" * 1000)
    result = CliRunner().invoke(app, ["check-run", str(corrupt)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.startswith(f"Error: {corrupt}") and len(result.stderr.strip().splitlines()) <= 2


def test_mlflows_own_client_reads_the_same_points(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow", reason="mlflow is not installed: the cross-check is optional")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    shutil.copytree(MLRUNS, tmp_path / "mlruns")
    shutil.copyfile(DB, tmp_path / "mlflow.db")
    for uri, ours in ((f"file:{tmp_path / 'mlruns'}", read_run(MLRUNS)), (f"sqlite:///{tmp_path / 'mlflow.db'}",
                                                                        read_run(DB))):
        client = mlflow.tracking.MlflowClient(tracking_uri=uri)
        for key in SERIES:
            theirs = sorted((m.step, m.value) for m in client.get_metric_history(ours.meta["mlflow_run_id"], key))
            assert theirs == list(zip(ours.get(key).steps, ours.get(key).values)), (uri, key)


# --- torchtune ----------------------------------------------------------------------------------------------------

def torchtune_lines(folder) -> list[dict[str, str]]:
    (log,) = folder.glob("log_*.txt")
    return [dict(pair.split(":", 1) for pair in line.split(" | ", 1)[1].split()) for line in log.read_text().splitlines()]


def test_torchtune_dpo_keys_are_normalised_to_trls():
    run = read_run(TORCHTUNE_DPO)
    lines = torchtune_lines(TORCHTUNE_DPO)
    assert run.format == "torchtune" and run.kind == PREFERENCE and run.preference_loss == "dpo"
    assert run.get("logps/chosen").values.tolist() == [float(line["log_probs/chosen"]) for line in lines]
    assert run.get("learning_rate").values.tolist() == [0.0] * 16
    assert {"rewards/margins", "rewards/accuracies", "logits/chosen"} <= set(run.series)
    assert run.original_keys["logps/chosen"] == "log_probs/chosen"


def test_torchtune_sft_steps_values_and_lines():
    (log,) = TORCHTUNE_SFT.glob("log_*.txt")
    assert detect(TORCHTUNE_SFT) == ("torchtune", log) and detect(log)[0] == "torchtune"
    run = read_run(TORCHTUNE_SFT)
    lines = torchtune_lines(TORCHTUNE_SFT)
    assert list(run.get("loss").steps) == list(range(1, 33))
    assert run.get("grad_norm").values.tolist() == [float(line["grad_norm"]) for line in lines]
    assert run.get("learning_rate").values[0] == 3.0 and run.get("loss").line(4) == 5


def test_torchtune_oddities(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "log_100.txt").write_text("Step 1 | loss:9.0 \n")
    (logs / "log_200.txt").write_text("Writing logs to somewhere\nStep 1 | loss:tensor(2.5000) lr:2e-05 \n"
                                      "Step 2 | loss:nan lr:2e-05 grad_norm:inf \nStep 3 | loss:2.")
    run = read_run(tmp_path, "torchtune")
    assert run.get("loss").values[0] == 2.5 and math.isnan(run.get("loss").values[1])
    assert [n.kind for n in run.notes] == ["bad-record", "truncated"] and run.notes[1].line == 4
    (logs / "nothing.txt").write_text("hello\n")
    with pytest.raises(InputError, match="no 'Step N"):
        read_run(logs / "nothing.txt", "torchtune")
