"""One bad value is one finding: on its row (the rest checked), a note at its log line (the rest read), or a
one-line error at its config key or flag, worded by mldebug; never an internal error. Inputs built in tmp_path."""

from __future__ import annotations

import json
import sqlite3
import struct
import sys

import pytest

from outcomes import assert_one_line_error, findings, run_cli, unchanged
from support import QWEN25, tf_event, tf_field, tf_record, tf_varint

OK = {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]}
DIGITS = sys.get_int_max_str_digits()
LONG = "9" * (DIGITS + 700)


def inspect(path, *extra):
    with unchanged(path):
        return run_cli("inspect-data", path, "-t", QWEN25, "--all", "-f", "json", *extra)


def lines(*rows: str) -> str:
    return "".join(row + "\n" for row in rows)


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_an_integer_of_thousands_of_digits_is_a_finding_on_its_row(tmp_path, suffix):
    bad = '{"messages": [{"role": "user", "content": "hi", "weight": ' + LONG + '}]}'
    rows = [json.dumps(OK), bad, json.dumps(OK)]
    path = tmp_path / f"d{suffix}"
    path.write_text(lines(*rows) if suffix == ".jsonl" else "[\n" + ",\n".join(rows) + "\n]\n")
    result = inspect(path)
    assert result.exit_code == 1, result.stderr
    message = f"a number has more than {DIGITS:,} digits, more than mldebug reads"
    assert findings(result.stdout) == [("DS010", "invalid-messages", 1, 2 if suffix == ".jsonl" else 3, message)]
    assert json.loads(result.stdout)["summary"]["rows_checked"] == 3


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_lone_surrogate_is_a_finding_on_its_row_and_the_rest_is_tokenized(tmp_path, suffix):
    bad = '{"messages": [{"role": "user", "content": "hi \\ud800"}, {"role": "assistant", "content": "4"}]}'
    pair = '{"messages": [{"role": "user", "content": "\\ud83d\\ude00"}, {"role": "assistant", "content": "4"}]}'
    rows = [json.dumps(OK), bad, pair]
    path = tmp_path / f"d{suffix}"
    path.write_text(lines(*rows) if suffix == ".jsonl" else "[\n" + ",\n".join(rows) + "\n]\n")
    result = inspect(path)
    assert result.exit_code == 1, result.stderr
    assert findings(result.stdout) == [("DS010", "invalid-messages", 1, 2 if suffix == ".jsonl" else 3, "row holds a "
                                        "lone surrogate \\ud800, which is not Unicode text (no tokenizer takes it)")]
    assert json.loads(result.stdout)["summary"]["rows_checked"] == 3


def test_token_ids_below_zero_or_past_32_bits_are_findings_on_their_rows(tmp_path):
    path = tmp_path / "tok.jsonl"
    path.write_text(lines('{"input_ids": [1, 2, -1], "labels": [-100, 2, 3]}',
                          '{"input_ids": [1, 2, 1099511627776], "labels": [-100, 2, 3]}',
                          '{"input_ids": [1, 2, 3], "labels": [-100, 2, 1099511627776]}'))
    result = inspect(path)
    assert [f[:4] + (f[4],) for f in findings(result.stdout) if f[0] == "DS010"] == [
        ("DS010", "invalid-messages", 0, 1, "input_ids holds -1 at position 2: a token id is from 0 to 2,147,483,647"),
        ("DS010", "invalid-messages", 1, 2, "input_ids holds 1,099,511,627,776 at position 2: a token id is from 0 to "
                                            "2,147,483,647"),
        ("DS010", "invalid-messages", 2, 3, "labels holds 1,099,511,627,776 at position 2: a label is a token id or -100"),
    ]


def test_a_json_lines_row_nested_100000_deep_is_a_finding(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(lines(json.dumps(OK), "[" * 100_000 + "]" * 100_000, json.dumps(OK)))
    result = inspect(path)
    assert findings(result.stdout) == [("DS010", "invalid-messages", 1, 2, "JSON nested too deeply")]


def test_a_byte_order_mark_is_read_not_a_finding(tmp_path):
    for name, text in [("bom.jsonl", lines(json.dumps(OK), json.dumps(OK))), ("bom.json", json.dumps([OK, OK]))]:
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + text.encode())
        result = inspect(path)
        assert result.exit_code == 0, (name, result.stdout, result.stderr)


def test_more_than_64_kib_of_leading_blank_lines_is_not_an_empty_file(tmp_path):
    for name, text in [("blank.jsonl", "\n" * 100_000 + json.dumps(OK) + "\n"), ("blank.json", "\n" * 100_000 + json.dumps([OK]))]:
        path = tmp_path / name
        path.write_text(text)
        result = inspect(path)
        assert result.exit_code == 0, (name, result.stderr)
        assert json.loads(result.stdout)["summary"]["rows_checked"] == 1


@pytest.mark.parametrize(("value", "message"), [
    ("nan", "checks.loss-spike.sigma: expected a finite number of 0 or more, got nan"),
    ("inf", "checks.loss-spike.sigma: expected a finite number of 0 or more, got inf"),
    ("-1", "checks.loss-spike.sigma: expected a finite number of 0 or more, got -1"),
    (LONG, f"line 2: a number of {len(LONG):,} digits, over the {DIGITS:,} mldebug reads"),
])
def test_thresholds_in_mldebug_toml_are_finite_and_in_range(tmp_path, monkeypatch, value, message):
    config = tmp_path / "mldebug.toml"
    config.write_text(f"[checks.loss-spike]\nsigma = {value}\n")
    monkeypatch.chdir(tmp_path)
    result = run_cli("check-run", tmp_path / "missing.jsonl")
    assert_one_line_error(result.exit_code, result.stderr, f"{config}: {message}")


def test_a_count_threshold_must_be_a_whole_number(tmp_path, monkeypatch):
    config = tmp_path / "mldebug.toml"
    config.write_text("[checks.loss-spike]\nwindow = 1e300\n")
    monkeypatch.chdir(tmp_path)
    result = run_cli("check-run", tmp_path / "missing.jsonl")
    assert_one_line_error(result.exit_code, result.stderr, f"{config}: checks.loss-spike.window: expected a whole "
                          "number up to 1,000,000,000 (a count), got 1e+300")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_integer_of_thousands_of_digits_in_a_training_config_is_a_one_line_error_at_its_line(tmp_path, suffix):
    path = tmp_path / f"train{suffix}"
    text = f"learning_rate: 0.0001\nmax_steps: {LONG}\n" if suffix == ".yaml" else \
        '{\n"learning_rate": 0.0001,\n"max_steps": ' + LONG + "\n}\n"
    path.write_text(text)
    with unchanged(path):
        result = run_cli("lr-plot", "-c", path, "--num-rows", "10")
    line = 2 if suffix == ".yaml" else 3
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}: line {line}: a number of {len(LONG):,} digits, over the {DIGITS:,} mldebug reads")


@pytest.mark.parametrize(("flags", "message", "hint"), [
    (("--rows", "0-99999999999999"), "--rows: '0-99999999999999' names over 1,000,000 rows",
     "check every row with --all, or a sample with --sample N"),
    (("--sample", "-1"), "--sample must be from 1 to 1,000,000,000, got -1", "--all checks every row"),
    (("--sample", "0"), "--sample must be from 1 to 1,000,000,000, got 0", "--all checks every row"),
])
def test_row_flags_out_of_range_are_one_line_errors(tmp_path, flags, message, hint):
    path = tmp_path / "d.jsonl"
    path.write_text(lines(json.dumps(OK)))
    result = run_cli("inspect-data", path, "-t", QWEN25, *flags)
    assert_one_line_error(result.exit_code, result.stderr, message, hint)


@pytest.mark.parametrize("interval", ["nan", "inf", "-1", "1e9"])
def test_watch_interval_out_of_range_is_a_one_line_error(tmp_path, interval):
    log = tmp_path / "trainer_log.jsonl"
    log.write_text(lines(json.dumps({"current_steps": 1, "total_steps": 2, "loss": 1.0})))
    result = run_cli("check-run", log, "--watch", "--interval", interval)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"--interval must be a number of seconds from 0 to 86,400, got {float(interval)}")


def test_a_tensorboard_field_of_the_wrong_wire_type_skips_that_event_with_a_note(tmp_path):
    """The tag as a fixed32 where a string is expected: the event is skipped, the events after it are read."""
    bad_item = tf_field(1, 5, struct.pack("<f", 1.0)) + tf_field(2, 5, struct.pack("<f", 2.0))
    bad = tf_field(1, 1, struct.pack("<d", 1.0)) + tf_field(2, 0, tf_varint(2)) + tf_field(5, 2, tf_field(1, 2, bad_item))
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(tf_record(e) for e in (tf_event(1, "train/loss", 2.0, False), bad,
                                                      tf_event(3, "train/loss", 1.5, False))))
    with unchanged(path):
        result = run_cli("check-run", path, "-f", "json")
    report = json.loads(result.stdout)
    assert report["series"]["loss"]["points"] == 2 and report["series"]["loss"]["last_step"] == 3
    notes = [f["message"] for f in report["findings"] if f["code"] == "RN012"]
    assert any("event 2 could not be decoded (field 1 has wire type 5, expected 2)" in n for n in notes), notes


def test_an_mlflow_step_of_inf_is_a_skipped_row_with_a_note(tmp_path):
    path = tmp_path / "mlflow.db"
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE runs (run_uuid TEXT, name TEXT, status TEXT, start_time INTEGER, lifecycle_stage TEXT);"
                     "CREATE TABLE metrics (key TEXT, value REAL, timestamp INTEGER, step INTEGER, is_nan INTEGER, run_uuid TEXT);"
                     "CREATE TABLE params (key TEXT, value TEXT, run_uuid TEXT);"
                     "INSERT INTO runs VALUES ('r1', 'run', 'FINISHED', 1, 'active');")
    rows = [("loss", 2.0 - s / 10, 0, s, 0, "r1") for s in range(1, 6)] + [("loss", 1.0, 0, float("inf"), 0, "r1")]
    db.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    result = run_cli("check-run", path, "-f", "json")
    report = json.loads(result.stdout)
    assert report["series"]["loss"]["points"] == 5
    assert any("1 metric rows of run r1 have a step that is not a whole number" in f["message"]
               for f in report["findings"] if f["code"] == "RN012")


def test_an_integer_of_thousands_of_digits_in_a_trainer_state_is_a_note_at_its_line(tmp_path):
    history = [{"step": s, "loss": 2.0 - s / 10, "learning_rate": 1e-4} for s in range(1, 6)]
    text = json.dumps({"global_step": 5, "log_history": history}, indent=1).replace('"loss": 1.8', f'"loss": {LONG}')
    path = tmp_path / "trainer_state.json"
    path.write_text(text)
    line = 1 + text[:text.index(LONG)].count("\n")
    with unchanged(path):
        result = run_cli("check-run", path, "-f", "json")
    report = json.loads(result.stdout)
    assert report["series"]["loss"]["points"] == 4 and report["series"]["loss"]["last_step"] == 5
    assert [(f["message"], f["location"]["line"]) for f in report["findings"] if f["code"] == "RN012"] == [
        (f"trainer_state.json: line {line}: a number of {len(LONG):,} digits, more than mldebug reads; read as missing",
         line)]


def test_an_integer_of_thousands_of_digits_in_a_jsonl_log_skips_that_line(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_text(lines(*(json.dumps({"current_steps": s, "total_steps": 4, "loss": 2.0 - s / 10}) for s in (1, 2, 4)),
                          '{"current_steps": 3, "total_steps": 4, "loss": ' + LONG + "}"))
    result = run_cli("check-run", path, "-f", "json")
    assert result.exit_code in (0, 1), result.stderr
    assert json.loads(result.stdout)["series"]["loss"]["points"] == 3


def test_an_integer_beyond_float_range_in_a_log_is_infinite_not_an_error(tmp_path):
    path = tmp_path / "trainer_state.json"
    history = [{"step": s, "loss": 2.0 - s / 10} for s in range(1, 4)]
    path.write_text(json.dumps({"log_history": history}).replace('"loss": 1.8', '"loss": 1' + "0" * 400))
    result = run_cli("check-run", path, "-f", "json")
    report = json.loads(result.stdout)
    assert report["series"]["loss"]["non_finite"] == 1


def test_an_integer_of_thousands_of_digits_in_a_messages_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "m.json"
    path.write_text('[{"role": "user",\n"content": "hi", "n": ' + LONG + "}]")
    result = run_cli("render", "-t", QWEN25, "-m", path)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}: line 2: a number of {len(LONG):,} digits, over the {DIGITS:,} mldebug reads")
