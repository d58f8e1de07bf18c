"""inspect-data on DPO/KTO/GRPO rows end to end: the JSON rows keep the trainer's view, the views show both sides."""

from __future__ import annotations

import json

from test_inspect_data_cli import run

from support import FIXTURES, QWEN25, write_jsonl

ROWS = FIXTURES / "trl-1.16.0-preference"


def doc(*args) -> dict:
    result = run("inspect-data", *map(str, args), "-t", str(QWEN25), "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_dpo_rows_carry_each_side_as_the_model_sees_it():
    out = doc(ROWS / "rows_dpo_conversational.json", "--rows", "0")
    row = out["rows"][0]
    assert out["context"]["format"] == "dpo rows, conversational, prompt explicit"
    for side in ("chosen", "rejected"):
        ids, labels = row[side]["input_ids"], row[side]["labels"]
        assert len(ids) == len(labels) and labels[: row["prompt_tokens"]] == [-100] * row["prompt_tokens"]
        assert all(label in (-100, i) for i, label in zip(ids, labels))
    first = row["first_difference"]
    assert row["chosen"]["input_ids"][:first] == row["rejected"]["input_ids"][:first]
    assert row["chosen"]["input_ids"][first] != row["rejected"]["input_ids"][first]


def test_kto_and_grpo_rows():
    kto = doc(ROWS / "rows_kto.json", "--rows", "1")["rows"][0]
    assert kto["label"] is False and len(kto["input_ids"]) == len(kto["labels"])
    grpo = doc(ROWS / "rows_grpo.json", "--task", "grpo", "--rows", "0")["rows"][0]
    assert grpo["prompt_input_ids"] and grpo["prompt"].endswith("<|im_start|>assistant\n")


def test_a_dropped_row_carries_a_finding():
    out = doc(ROWS / "rows_dpo_conversational.json", "--max-length", "48", "--rows", "2")
    assert out["rows"][0]["dropped"] is True
    assert [f["code"] for f in out["findings"]] == ["DP005"]


def test_text_view_shows_the_prompt_once_and_marks_the_first_difference():
    result = run("inspect-data", str(ROWS / "rows_dpo_conversational.json"), "-t", str(QWEN25), "--rows", "0",
                 "--color", "never", "--exit-zero")
    assert result.stdout.count("What is the boiling point") == 1
    assert "chosen · " in result.stdout and "rejected · " in result.stdout
    assert "Water boils at·▶100" in result.stdout and "Water boils at·▶90" in result.stdout


def test_html_view_outlines_the_first_difference(tmp_path):
    out = tmp_path / "r.html"
    run("inspect-data", str(ROWS / "rows_dpo_conversational.json"), "-t", str(QWEN25), "--rows", "0", "-f", "html",
        "-o", str(out), "--exit-zero")
    page = out.read_text()
    assert page.count("tok t diff") == 2 and "Prompt (shared)" in page


def test_bad_flags_and_rows_are_one_line_errors(tmp_path):
    bad = run("inspect-data", str(ROWS / "rows_kto.json"), "-t", str(QWEN25), "--task", "ppo")
    assert bad.exit_code == 2 and "--task: unknown task 'ppo'" in bad.stderr and "Traceback" not in bad.stderr
    path = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "Q?", "chosen": 3, "rejected": "B"}])
    bad = run("inspect-data", str(path), "-t", str(QWEN25))
    assert bad.exit_code == 2 and "bad.jsonl: row 0 does not fit dpo rows: chosen is a number" in bad.stderr
    bad = run("inspect-data", str(ROWS / "rows_dpo_conversational.json"), "-t", str(QWEN25), "--truncation-mode", "x")
    assert bad.exit_code == 2 and "--truncation-mode" in bad.stderr


def test_orpo_rows_get_the_eos_id_after_the_template_end_and_an_over_long_prompt_keeps_its_row():
    out = doc(ROWS / "rows_dpo_conversational.json", "--task", "orpo", "--max-length", "48")
    assert out["context"]["format"].startswith("orpo rows, conversational")
    codes = {(f["code"], f["location"]["row"]) for f in out["findings"]}
    assert ("DP007", 0) in codes  # <|im_end|>\n then ORPO's own <|im_end|>
    assert not any(code == "DP005" for code, _ in codes)  # ORPO drops nothing
    emptied = [f for f in out["findings"] if f["code"] == "DP006" and "cut to nothing" in f["message"]]
    assert [f["location"]["row"] for f in emptied] == [2, 6]  # the two prompts over 48 tokens
    row = doc(ROWS / "rows_dpo_conversational.json", "--task", "orpo", "--rows", "0")["rows"][0]
    assert row["chosen"]["input_ids"][-3:] == [151645, 198, 151645]


def test_kto_on_pairs_shows_each_side_as_a_row_of_its_own(tmp_path):
    out = doc(ROWS / "rows_dpo_conversational.json", "--task", "kto", "--rows", "3")
    assert "unpaired by the trainer" in out["context"]["format"]
    row = out["rows"][0]
    assert row["unpaired"] is True
    assert (row["chosen"]["label"], row["rejected"]["label"]) == (True, False)
    assert out["summary"]["sequences_per_row"] == 2
    text = run("inspect-data", str(ROWS / "rows_dpo_conversational.json"), "-t", str(QWEN25), "--task", "kto",
               "--rows", "3", "--exit-zero", "--color", "never").stdout
    assert "chosen → desirable row" in text and "rejected → undesirable row" in text
