"""Issue 36 item 3: no line of a JSON Lines dataset or a run log is read whole into memory when it is huge, and a
run of blank lines cannot stall a pass. A dataset with over 1,000,000 blank lines in a row is one error naming the
file and line; a 128 MiB log line (with or without its newline) is a note at its line, the rest is read, and the
process never holds it (peak memory stays far below the line's size); 20 million blank log lines are counted in C."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.sources import dataset
from outcomes import assert_one_line_error, run_cli, run_cli_process, unchanged
from support import QWEN25

ROW = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "4"}]})
LOG = b'{"step": 1, "loss": 1.0}\n'
LONG = 128 * 2**20


def _notes(stdout: str) -> list[tuple[str, int | None]]:
    return [(f["message"], f["location"].get("line")) for f in json.loads(stdout)["findings"] if f["code"] == "RN012"]


def test_a_run_of_blank_lines_in_a_dataset_is_one_error_at_its_first_line(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset, "MAX_BLANK_RUN", 1000)
    path = tmp_path / "blank.jsonl"
    path.write_text(ROW + "\n" + "\n" * 1001 + ROW + "\n")
    with unchanged(path):
        result = run_cli("inspect-data", path, "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}:2: over 1,000 blank lines in a row; mldebug stops reading there",
                          "remove the blank lines")


def test_blank_lines_under_the_bound_are_read_past(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset, "MAX_BLANK_RUN", 1000)
    path = tmp_path / "blank.jsonl"
    path.write_text("\n" * 1000 + ROW + "\n")
    result = run_cli("inspect-data", path, "-t", QWEN25, "-f", "json")
    assert result.exit_code == 0 and json.loads(result.stdout)["summary"]["rows"] == 1


@pytest.mark.slow
def test_a_million_blank_lines_at_the_real_bound(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * (dataset.MAX_BLANK_RUN + 1) + ROW.encode() + b"\n")
    code, _, stderr, _ = run_cli_process("inspect-data", path, "-t", QWEN25)
    assert_one_line_error(code, stderr, f"{path}:1: over 1,000,000 blank lines in a row; mldebug stops reading there",
                          "remove the blank lines")


@pytest.mark.parametrize("newline", [True, False], ids=["with its newline", "no newline at all"])
def test_a_huge_log_line_is_a_note_and_never_held(tmp_path, newline):
    path = tmp_path / "trainer_log.jsonl"
    with open(path, "wb") as fh:
        fh.write(LOG)
        for _ in range(LONG // 2**20):
            fh.write(b"x" * 2**20)
        if newline:
            fh.write(b'\n{"step": 2, "loss": 0.9}\n')
    with unchanged(path):
        code, stdout, stderr, peak = run_cli_process("check-run", path, "--format", "jsonl", "-f", "json")
    assert code == 0, stderr
    size = "134,217,728 bytes long, over the 8 MiB mldebug reads per log line"
    expected = [(f"line 2 is {size}; skipped", 2)] if newline else [(f"the last line (2) is {size}; ignored", 2)]
    assert _notes(stdout) == expected
    assert json.loads(stdout)["summary"]["last_step"] == (2 if newline else 1)
    assert peak is None or peak < 100 + 8, peak  # the command alone needs ~50 MiB; the line is 128 MiB


def test_millions_of_blank_log_lines_are_stepped_over(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    path.write_bytes(LOG + b"\n" * 20_000_000 + b'{"step": 2, "loss": 0.9}\n')
    code, stdout, stderr, _ = run_cli_process("check-run", path, "-f", "json", timeout=120)
    assert code == 0, stderr
    summary = json.loads(stdout)["summary"]
    assert (summary["logged_points"], summary["last_step"]) == (2, 2)
