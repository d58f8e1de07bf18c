"""Run-log readers: one test per format on real logs, detection, and the oddities they must repair."""

from __future__ import annotations

import json
import math
import shutil
import struct

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.runlog import detect, read_run
from mldebug_cli.sources.runlog.model import PREFERENCE, RL, SFT
from support import CORPUS_RUNS, RUNS, needs_corpus, tf_event, tf_field, tf_record

CORPUS_FILES = sorted(p.name for p in CORPUS_RUNS.iterdir() if p.name not in ("SOURCES.md", "MANIFEST.json")) \
    if CORPUS_RUNS.is_dir() else []


def history(path) -> list[dict]:
    return json.loads(path.read_text())["log_history"]


# --- trainer_state.json -------------------------------------------------------------------------------------------

def test_trainer_state_series_are_the_log_history_values_with_lines():
    path = RUNS / "sft-healthy" / "trainer_state.json"
    run = read_run(path)
    train = [e for e in history(path) if "loss" in e]
    evals = [e for e in history(path) if "eval_loss" in e]
    assert run.format == "trainer-state" and run.kind == SFT
    assert list(run.get("loss").steps) == [e["step"] for e in train]
    assert list(run.get("loss").values) == [e["loss"] for e in train]
    assert list(run.get("eval_loss").values) == [e["eval_loss"] for e in evals]
    assert run.meta["max_steps"] == 60 and run.meta["train_loss"] > 0  # the final entry is metadata, not a series
    first_line = path.read_text().splitlines()[run.get("loss").line(0) - 1]
    assert first_line.strip() == f'"step": {train[0]["step"]}'


def test_a_folder_reads_its_newest_trainer_state(tmp_path):
    source = RUNS / "sft-healthy" / "trainer_state.json"
    state = json.loads(source.read_text())
    for step in (20, 40):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        partial = dict(state, global_step=step, log_history=[e for e in state["log_history"] if e["step"] <= step])
        (folder / "trainer_state.json").write_text(json.dumps(partial))
    assert detect(tmp_path) == ("trainer-state", tmp_path / "checkpoint-40" / "trainer_state.json")
    shutil.copyfile(source, tmp_path / "trainer_state.json")  # the output folder's own, written at the end
    assert detect(tmp_path)[1] == tmp_path / "trainer_state.json"
    assert read_run(tmp_path).last_step == 60


def test_bare_nan_and_infinity_tokens_are_read(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text('{"max_steps": 3, "log_history": [{"loss": NaN, "grad_norm": Infinity, "step": 1},'
                    ' {"loss": 1.5, "grad_norm": -Infinity, "step": 2}]}')
    run = read_run(path)
    assert math.isnan(run.get("loss").values[0]) and run.get("grad_norm").values[0] == math.inf


# --- LLaMA-Factory trainer_log.jsonl -------------------------------------------------------------------------------

@needs_corpus
def test_llama_factory_jsonl_renames_lr_and_accuracy():
    run = read_run(CORPUS_RUNS / "lf-dpo__360-llama-factory.trainer_log.jsonl")
    assert run.format == "jsonl" and run.kind == PREFERENCE
    assert run.get("learning_rate").values[0] == pytest.approx(9.803921568627451e-10)
    assert run.get("rewards/accuracies").values[:3].tolist() == [1.0, 1.0, 0.25]
    assert run.meta["max_steps"] == 5100 and list(run.get("loss").steps[:3]) == [1, 2, 3]


@needs_corpus
def test_two_writers_interleaved_in_one_jsonl_are_repaired_and_noted():
    run = read_run(CORPUS_RUNS / "lf-sft__sft-training-llm.trainer_log.jsonl")
    steps = list(run.get("loss").steps)
    assert steps == sorted(set(steps))
    assert {n.kind for n in run.notes} >= {"interleaved", "duplicate"}


def test_a_truncated_last_line_and_a_bad_line_are_notes(tmp_path):
    lines = [json.dumps({"current_steps": s, "total_steps": 10, "loss": 2.0 - s / 10, "lr": 1e-4}) for s in (1, 2, 3)]
    path = tmp_path / "trainer_log.jsonl"
    path.write_text(lines[0] + "\nnot json\n" + lines[1] + "\n" + lines[2][:25])
    run = read_run(path)
    assert list(run.get("loss").steps) == [1, 2]
    assert [n.kind for n in run.notes] == ["bad-record", "truncated"]
    assert run.notes[0].line == 2 and run.notes[1].line == 4


# --- console ------------------------------------------------------------------------------------------------------

def test_console_dicts_of_strings_match_the_same_runs_trainer_state():
    console = read_run(RUNS / "sft-console" / "console.log")
    state = read_run(RUNS / "sft-console" / "trainer_state.json")
    assert console.format == "console"
    # no progress bar (disable_tqdm) and no step in the dicts: positions, and a note saying so
    assert list(console.get("loss").steps) == list(range(1, len(state.get("loss")) + 1))
    assert [n.kind for n in console.notes] == ["no-step"]
    for printed, logged in zip(console.get("loss").values, state.get("loss").values):
        assert float(f"{logged:.4g}") == printed  # v5 prints `.4g` strings
    assert console.meta["train_loss"] == pytest.approx(state.meta["train_loss"], rel=1e-3)


@needs_corpus
def test_console_steps_come_from_the_progress_bar_total_when_output_was_buffered():
    run = read_run(CORPUS_RUNS / "trl-grpo-console__nips-grpo-dynamics.log")
    assert run.kind == RL and list(run.get("reward").steps[:3]) == [5, 10, 15] and run.get("reward").steps[-1] == 200
    assert run.get("entropy").values[0] == pytest.approx(0.17924876864999534)


@needs_corpus
def test_console_v5_strings_are_numbers():
    run = read_run(CORPUS_RUNS / "trl-grpo-console__nips-grpo-dynamics-2.log")
    assert len(run.get("reward")) == 50 and set(run.get("reward").values) == {0.0}
    assert run.get("learning_rate").values[1] == pytest.approx(3.333e-05)
    assert run.get("completions/mean_length").values[0] == 256  # TRL <= 0.16's completion_length


def test_console_nan_printed_by_transformers_4(tmp_path):
    path = tmp_path / "train.log"
    path.write_text("{'loss': nan, 'grad_norm': inf, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                    "{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.2}\n")
    run = read_run(path)
    assert math.isnan(run.get("loss").values[0]) and run.get("grad_norm").values[0] == math.inf
    assert run.get("loss").values[1] == 1.25


def test_torchtune_step_lines(tmp_path):
    path = tmp_path / "log_1700000000.txt"
    path.write_text("Step 1 | loss:tensor(2.5000) lr:2e-05 tokens_per_second_per_gpu:100.0 \n"
                    "Step 2 | loss:2.25 lr:2e-05 val_loss:2.4 \n")
    run = read_run(path, "console")
    assert run.get("loss").values.tolist() == [2.5, 2.25] and run.get("eval_loss").values.tolist() == [2.4]


# --- TensorBoard --------------------------------------------------------------------------------------------------

@needs_corpus
def test_tensorboard_scalars_match_the_runs_trainer_state_in_float32():
    folder = CORPUS_RUNS / "hf-sft__serial-lain-ai"
    board = read_run(folder / "runs", "tensorboard")
    state = read_run(folder / "trainer_state.json")
    assert list(board.get("loss").steps) == list(state.get("loss").steps)
    for tb, logged in zip(board.get("loss").values, state.get("loss").values):
        assert tb == struct.unpack("<f", struct.pack("<f", logged))[0]
    assert detect(folder / "runs")[0] == "tensorboard"


def test_tensorboard_tensor_scalars_and_a_truncated_tail(tmp_path):
    path = tmp_path / "events.out.tfevents.1.host"
    first = tf_record(tf_field(1, 1, struct.pack("<d", 1.0)) + tf_field(3, 2, b"brain.Event:2"))
    body = b"".join(tf_record(tf_event(s, "train/loss", 3.0 - s / 4, tensor=s % 2 == 0)) for s in range(1, 5))
    path.write_bytes(first + body + tf_record(tf_event(5, "eval/loss", 1.0, tensor=False))[:-9])
    run = read_run(path)
    assert run.format == "tensorboard" and run.get("loss").values.tolist() == [2.75, 2.5, 2.25, 2.0]
    assert run.get("eval_loss") is None and [n.kind for n in run.notes] == ["truncated"]


# --- W&B ----------------------------------------------------------------------------------------------------------

@needs_corpus
def test_wandb_offline_log_with_a_cut_last_record():
    run = read_run(CORPUS_RUNS / "wandb-offline__stanford-alpaca.run-argq0i8h.wandb")
    assert run.format == "wandb" and run.meta["wandb_history_rows"] == 730  # as W&B's DataStore 0.29 reads it
    loss = run.get("loss")
    assert len(loss) == 729 and loss.steps[0] == 1 and list(loss.steps) == sorted(set(loss.steps))
    assert [n.kind for n in run.notes] == ["truncated"]


def test_wandb_csv_panel_export(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text('Step,"run-a - train/loss","run-a - train/loss__MIN","run-a - train/loss__MAX","run-b - train/loss"\n'
                    "10,2.5,2.4,2.6,9\n20,2.25,2.2,2.3,9\n")
    run = read_run(path)
    assert run.format == "csv" and run.get("loss").values.tolist() == [2.5, 2.25]
    assert {n.kind for n in run.notes} == {"bad-record", "sampled"}


# --- every corpus run; detection; bad input -----------------------------------------------------------------------

@needs_corpus
@pytest.mark.parametrize("name", CORPUS_FILES)
def test_every_corpus_run_is_read(name):
    run = read_run(CORPUS_RUNS / name)
    assert run.get("loss") is not None and len(run.get("loss")) > 0


@pytest.mark.parametrize("content", [b"\x00\x01binary junk\xff" * 50, b"", b"hello world\n"])
def test_unreadable_input_is_one_input_error(tmp_path, content):
    path = tmp_path / "junk.bin"
    path.write_bytes(content)
    with pytest.raises(InputError) as error:
        read_run(path)
    assert "junk.bin" in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("fmt", ["trainer-state", "jsonl", "console", "tensorboard", "wandb", "csv", "mlflow",
                                 "torchtune"])
def test_junk_under_every_forced_format_is_one_input_error(tmp_path, fmt):
    path = tmp_path / "junk"
    path.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(InputError):
        read_run(path, fmt)


def test_trainer_state_read_in_small_chunks_gives_the_same_run(monkeypatch):
    import mldebug_cli.sources.runlog.trainer_state as trainer_state

    paths = sorted(RUNS.glob("*/trainer_state.json"))
    whole = [read_run(path) for path in paths]
    monkeypatch.setattr(trainer_state, "CHUNK_CHARS", 7)  # every entry straddles chunk boundaries
    for path, expected in zip(paths, whole):
        run = read_run(path)
        assert run.meta == expected.meta and set(run.series) == set(expected.series)
        for key, series in expected.series.items():
            assert list(run.series[key].steps) == list(series.steps) and list(run.series[key].lines) == list(series.lines)
            assert run.series[key].values.tobytes() == series.values.tobytes()


def test_evenly_spaced_steps_and_lines_are_ranges_until_they_are_not(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    rows = [json.dumps({"current_steps": s, "loss": 2.0 - s / 100}) for s in range(5, 55, 5)]
    path.write_text("\n".join(rows) + "\n")
    loss = read_run(path).get("loss")
    assert loss.steps == range(5, 55, 5) and loss.lines == range(1, 11)  # no array of a million steps
    path.write_text("\n".join(rows[:6] + rows[4:]) + "\n")  # a resume replays two steps
    loss = read_run(path).get("loss")
    assert list(loss.steps) == list(range(5, 55, 5)) and loss.line(4) == 7 and not isinstance(loss.steps, range)
