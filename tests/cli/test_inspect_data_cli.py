"""inspect-data end to end through the CLI, on real tokenizers and datasets."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from mldebug_cli.cli import app
from support import (
    ALPACA,
    AXOLOTL_MISSING_TURNS,
    GLAIVE,
    LLAMA3,
    NEMO,
    PHI3,
    QWEN3,
    QWEN25,
    ROOT,
    needs_corpus,
    write_jsonl,
)

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@needs_corpus
def test_json_contract_on_the_alpaca_demo():
    result = run("inspect-data", ALPACA, "-t", QWEN25, "--rows", "0,5-6", "-f", "json", "--train-on", "assistant", "--framework", "axolotl")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["tool"]["name"] == "mldebug" and doc["command"] == "inspect-data"
    assert set(doc["summary"]) >= {"rows", "rows_checked", "tokens", "trainable_tokens", "by_check"}
    assert doc["summary"]["rows"] == 999 and doc["summary"]["rows_checked"] == 3
    assert [r["row"] for r in doc["rows"]] == [0, 5, 6]
    row = doc["rows"][0]
    assert row["line"] == 2 and row["prompt"].startswith("Below is an instruction that describes a task")  # axolotl's alpaca prompter
    assert len(row["input_ids"]) == len(row["labels"]) == len(row["pieces"])
    trained = [i for i, label in zip(row["input_ids"], row["labels"]) if label != -100]
    from transformers import AutoTokenizer

    decoded = AutoTokenizer.from_pretrained(str(QWEN25)).decode(trained)
    assert decoded == json.loads(ALPACA.read_text())[0]["output"] + "<|im_end|>"  # the response, then the EOS axolotl appends
    assert doc["findings"] == []


@needs_corpus
def test_findings_point_at_rows_and_lines_and_exit_1(tmp_path, glaive_rows):
    # transformers: the roles mapped as LLaMA-Factory maps them (TRL keeps the tags: DS011 on every row)
    result = run("inspect-data", GLAIVE, "-t", PHI3, "--rows", "0-3", "-f", "json", "--framework", "transformers")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    dropped = [f for f in doc["findings"] if f["code"] == "DS011"]
    assert {f["location"]["row"] for f in dropped} == {0, 3}
    assert all(f["location"]["path"] == str(GLAIVE) and f["location"]["message_index"] for f in dropped)
    assert {f["location"]["line"] for f in dropped} == {2, 121}  # the JSON array elements' first lines


@needs_corpus
def test_fail_on_select_and_ignore():
    base = ["inspect-data", GLAIVE, "-t", PHI3, "--rows", "0", "-f", "json", "--framework", "transformers"]
    assert run(*base).exit_code == 1
    quiet = ["--ignore", "unmapped-role,tool-call-dropped"]
    assert run(*base, *quiet).exit_code == 0  # only warnings are left
    assert run(*base, *quiet, "--fail-on", "warning").exit_code == 1
    only = json.loads(run(*base, "--select", "DS02").stdout)
    assert {f["code"] for f in only["findings"]} == {"DS023", "DS024", "DS025"}
    bad = run(*base, "--select", "DS999")
    assert bad.exit_code == 2 and bad.stderr.startswith("Error: --select/--ignore: 'DS999' matches no check")


@needs_corpus
def test_text_view_shows_prompt_tokens_and_summary(tmp_path):
    result = run("inspect-data", AXOLOTL_MISSING_TURNS, "-t", QWEN3, "--train-on", "assistant", "--framework", "axolotl", "--color", "never")
    out = result.stdout
    assert "Rendered prompt" not in out and "<|im_start|>assistant↵" in out  # the table and raw prompt: --tokens
    # as axolotl 0.19 trains it: the empty turn not at all, a reply with its <|im_end|> but not the newline after
    assert "<|im_start|>assistant↵\n<|im_end|>↵\n<|im_start|>user↵" in out
    assert "simple answer.<|im_end|>⟧↵\n" in out
    assert "DS012 empty-turn" in out and "DS014" not in out and "masking: axolotl-chat-template" in out
    assert "Summary" in out and "trained" in out
    assert "\x1b[" not in out


@needs_corpus
def test_output_file_and_machine_output_is_clean(tmp_path):
    target = tmp_path / "report.json"
    # transformers: alpaca rows read as mldebug converts them (TRL refuses them: DS027)
    result = run("inspect-data", ALPACA, "-t", QWEN25, "--rows", "1", "-f", "json", "-o", target, "--framework", "transformers")
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(target.read_text())["summary"]["rows_checked"] == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", "the file is empty"),
        ("\x00\x01\x02binary", "binary file"),
        ('[{"messages": [', ":1:16: row 0: invalid JSON"),
        ('[{"text": "a"},\n', "not closed (file truncated?)"),
    ],
)
def test_unreadable_datasets_get_one_line_errors(tmp_path, content, expected):
    path = tmp_path / ("data.json" if content.startswith("[") else "data.jsonl")
    path.write_bytes(content.encode("latin-1"))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    result = run("inspect-data", path, "-t", QWEN25)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("Error: ") and expected in lines[0] and str(path) in lines[0]
    assert "Traceback" not in result.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@needs_corpus
def test_bad_tokenizer_and_template_and_flags(tmp_path):
    empty = tmp_path / "tok"
    empty.mkdir()
    result = run("inspect-data", ALPACA, "-t", empty)
    assert result.exit_code == 2 and "no tokenizer in this folder" in result.stderr
    missing = run("inspect-data", ALPACA, "-t", QWEN25, "--chat-template", tmp_path / "nope.jinja")
    assert missing.exit_code == 2 and "no such chat template file" in missing.stderr
    assert run("inspect-data", tmp_path / "none.jsonl", "-t", QWEN25).exit_code == 2
    rows = run("inspect-data", ALPACA, "-t", QWEN25, "--rows", "5000")
    assert rows.exit_code == 2 and "past the end" in rows.stderr


@needs_corpus
def test_a_template_that_does_not_compile_is_one_error_and_one_that_raises_is_a_finding_per_row(tmp_path):
    (tmp_path / "filter.jinja").write_text("{% for m in messages %}{{ m.content | nosuchfilter }}{% endfor %}")
    result = run("inspect-data", ALPACA, "-t", QWEN25, "--rows", "0-1", "--chat-template", tmp_path / "filter.jinja")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: {tmp_path / 'filter.jinja'}: the chat template does not compile: line 1: No filter named 'nosuchfilter'.")
    (tmp_path / "raise.jinja").write_text("{% for m in messages %}{{ raise_exception('no ' + m.role) }}{% endfor %}")
    result = run("inspect-data", ALPACA, "-t", QWEN25, "--rows", "0-1", "--chat-template", tmp_path / "raise.jinja", "-f", "json",
                 "--framework", "transformers")  # TRL would refuse the alpaca rows before rendering (DS027)
    assert result.exit_code == 1
    assert [(f["code"], f["location"]["row"]) for f in json.loads(result.stdout)["findings"]] == [("DS009", 0), ("DS009", 1)]


@needs_corpus
def test_double_bos_end_to_end_on_pre_rendered_mistral_text(tmp_path, alpaca_rows):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(NEMO))
    rows = [{"text": tok.apply_chat_template([{"role": "user", "content": r["instruction"]}, {"role": "assistant", "content": r["output"]}], tokenize=False)}
            for r in alpaca_rows[:5]]
    path = write_jsonl(tmp_path / "rendered.jsonl", rows)
    doc = json.loads(run("inspect-data", path, "-t", NEMO, "--all", "-f", "json").stdout)
    assert doc["summary"]["by_check"].get("DS002") == 5
    assert doc["rows"][0]["input_ids"][:2] == [1, 1]


def test_help_imports_no_heavy_library():
    code = (
        "import sys\n"
        "from mldebug_cli.cli import main\n"
        "sys.argv = ['mldebug', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('transformers', 'datasets', 'torch', 'matplotlib', 'tokenizers', 'jinja2', 'ray') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "inspect-data" in result.stdout
    assert "HEAVY []" in result.stdout, result.stdout[-500:]


def _run_main_in_child(args: list[str]) -> subprocess.CompletedProcess:
    """``mldebug ARGS`` in a fresh interpreter, printing afterwards whether torch was imported."""
    code = (
        "import sys\n"
        "from mldebug_cli.cli import main\n"
        f"sys.argv = ['mldebug', '--debug', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TORCH', 'torch' in sys.modules)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


@needs_corpus
def test_an_inspect_data_process_keeps_torch_out_and_reports_the_same(tmp_path):
    """`mldebug inspect-data` never imports torch (1.5-2 s of start-up); the tokens and findings stay the same."""
    out = tmp_path / "report.json"
    args = ["inspect-data", str(GLAIVE), "-t", str(PHI3), "--framework", "axolotl", "--all", "-f", "json", "-o", str(out)]
    result = _run_main_in_child(args)
    assert "TORCH False" in result.stdout, result.stdout[-500:] + result.stderr[-2000:]
    assert "PyTorch was not found" not in result.stderr
    in_process = run(*args[:-2])  # this pytest process has torch: the same report, token for token
    assert json.loads(out.read_text()) == json.loads(in_process.stdout)


@needs_corpus
def test_a_parquet_dataset_reads_in_a_process_that_keeps_torch_out(tmp_path):
    """datasets imports torch when it sees it in sys.modules: the tokenizer load must leave no trace there."""
    import datasets

    path = tmp_path / "alpaca.parquet"
    datasets.Dataset.from_list(json.loads(ALPACA.read_text())[:20]).to_parquet(str(path))
    result = _run_main_in_child(["inspect-data", str(path), "-t", str(QWEN25), "--all", "-f", "json", "-o", str(tmp_path / "r.json")])
    assert "TORCH False" in result.stdout, result.stdout[-500:] + result.stderr[-2000:]
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["rows_checked"] == 20


@needs_corpus
def test_data_format_overrides_a_detection_that_refuses(tmp_path):
    """Ranking rows are inspected as DPO pairs; --task sft refuses them, and --data-format reads them as chats."""
    rows = [{"conversations": [{"from": "human", "value": r["instruction"]}, {"from": "gpt", "value": r["output"]}],
             "chosen": {"from": "gpt", "value": r["output"]}, "rejected": {"from": "gpt", "value": "no"}}
            for r in json.loads(ALPACA.read_text())[:3]]
    path = write_jsonl(tmp_path / "ranking.jsonl", rows)
    as_pairs = json.loads(run("inspect-data", path, "-t", QWEN25, "--all", "-f", "json", "--exit-zero").stdout)
    assert as_pairs["summary"]["pairs"] == 3 and as_pairs["context"]["format"].startswith("dpo rows")
    refused = run("inspect-data", path, "-t", QWEN25, "--task", "sft")
    assert refused.exit_code == 2 and "a preference dataset" in refused.stderr
    forced = run("inspect-data", path, "-t", QWEN25, "--data-format", "sharegpt", "--all", "-f", "json",
                 "--framework", "transformers")  # the tags mapped (TRL keeps them: DS011)
    doc = json.loads(forced.stdout)
    assert forced.exit_code == 0 and doc["summary"]["rows_checked"] == 3 and doc["summary"]["trainable_tokens"] > 0


def test_only_commands_that_never_need_torch_keep_it_out():
    from mldebug_cli.cli import TORCH_FREE, _command

    assert _command(["--debug", "inspect-data", "x.jsonl", "-t", "tok"]) == "inspect-data"
    assert _command(["--version"]) is None
    assert "lr-plot" not in TORCH_FREE and "preflight" not in TORCH_FREE  # the LR engine runs torch's schedulers


def test_explain_prints_the_checks_documentation():
    result = run("explain", "no-trainable-tokens")
    assert result.exit_code == 0
    assert result.stdout.startswith("DS001 no-trainable-tokens (error")
    for heading in ("What it finds", "Why it matters for training", "Example", "Fix"):
        assert heading in result.stdout
    assert run("explain", "ds013").stdout.startswith("DS013 special-token-in-content")
    unknown = run("explain", "nope")
    assert unknown.exit_code == 2 and "unknown check 'nope'" in unknown.stderr


def test_the_text_view_of_a_huge_row_is_bounded(tmp_path):
    text = " ".join(f"word{i}" for i in range(6000))
    path = write_jsonl(tmp_path / "big.jsonl", [{"text": text}])
    # above TRL's default max_length 1024, which would cut the row first
    out = " ".join(run("inspect-data", path, "-t", QWEN25, "--max-length", "100000", "--rows", "0", "--color", "never").stdout.split())
    assert "more characters" in out and "24,891 more tokens" in out and "word5999" not in out


def test_the_trained_text_view_shows_a_character_split_across_tokens_once(tmp_path):
    # Llama 3's byte-level BPE gives 薛 and 谔 two tokens each, both with the character's offsets
    data = tmp_path / "cjk.jsonl"
    write_jsonl(data, [{"messages": [{"role": "user", "content": "谁是薛定谔?"},
                                     {"role": "assistant", "content": "薛定谔是物理学家。"}]}])
    out = run("inspect-data", data, "-t", LLAMA3, "--rows", "0", "--color", "never", "--exit-zero").stdout
    assert "谁是薛定谔?" in out and "薛定谔是物理学家。<|eot_id|>" in out
    assert "薛薛" not in out and "谔谔" not in out


@pytest.mark.parametrize("row", [
    {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
    {"prompt": "Say hi.", "chosen": "hi", "rejected": "no"},
])
def test_rows_that_run_past_the_end_are_left_out_and_said(tmp_path, row):
    data = tmp_path / "one.jsonl"
    write_jsonl(data, [row])
    result = run("inspect-data", data, "-t", QWEN3, "--rows", "0-2", "-f", "json", "--exit-zero")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["context"]["rows_checked"] == "1 of 1 (--rows; rows 1-2 past the end of the 1-row dataset left out)"
    nothing = run("inspect-data", data, "-t", QWEN3, "--rows", "3,7")
    assert nothing.exit_code == 2 and "row 3 is past the end of the dataset (1 rows" in nothing.stderr
