"""Bad dataset files through `mldebug inspect-data`: a finding on the right row and line, or a one-line error."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.sources.dataset import MAX_DEPTH, MAX_ROW_BYTES
from outcomes import HOSTILE, assert_one_line_error, findings, run_cli, run_cli_process, unchanged
from support import QWEN3, QWEN25

DATASETS = HOSTILE / "datasets"
OK_ROW = {"messages": [{"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "4"}]}


def inspect(path, tokenizer=QWEN25, *extra):
    with unchanged(path):
        return run_cli("inspect-data", path, "-t", tokenizer, "--all", "-f", "json", *extra)


def test_truncated_jsonl_last_line_is_a_finding_and_the_rest_is_checked():
    result = inspect(DATASETS / "truncated.jsonl")
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        ("DS010", "invalid-messages", 1, 2, "invalid JSON at column 71: Unterminated string starting at")
    ]
    assert json.loads(result.stdout)["summary"]["rows_failed"] == 1


def test_non_utf8_line_is_a_finding_naming_the_byte():
    result = inspect(DATASETS / "non_utf8.jsonl")
    assert result.exit_code == 1
    assert findings(result.stdout) == [("DS010", "invalid-messages", 1, 2, "line is not valid UTF-8 (byte 46)")]
    assert json.loads(result.stdout)["summary"]["rows_checked"] == 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("binary.jsonl", "this is a binary file, not JSON text"),
        ("empty.jsonl", "the file is empty"),
        ("blank_lines.jsonl", "the file is empty"),
    ],
)
def test_files_without_rows_are_one_line_errors(name, message):
    path = DATASETS / name
    result = inspect(path)
    assert_one_line_error(result.exit_code, result.stderr, f"{path}: {message}")


def test_rows_of_other_formats_are_findings_after_the_first_rows_format():
    result = inspect(DATASETS / "mixed_formats.jsonl")
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        ("DS010", "invalid-messages", row, row + 1, "messages is null, expected a list of messages") for row in (1, 2, 3, 4)
    ]
    assert json.loads(result.stdout)["context"]["format"] == "messages (assumed from column messages of role/content messages)"


def test_wrong_column_names_are_one_line_error_with_hint():
    path = DATASETS / "wrong_columns.jsonl"
    result = inspect(path)
    assert_one_line_error(
        result.exit_code, result.stderr, f"{path}: cannot tell the row format from the columns ['answer', 'question']",
        hint="pass --data-format (messages, sharegpt, alpaca, prompt-completion, text, tokenized)",
    )


def test_null_content_is_a_finding_on_its_message():
    result = inspect(DATASETS / "null_content.jsonl")
    assert result.exit_code == 1
    assert findings(result.stdout) == [("DS010", "invalid-messages", 0, 1, "the user message's content is null")]
    assert json.loads(result.stdout)["findings"][0]["location"]["message_index"] == 0


def test_content_as_a_list_of_parts_meets_each_template_as_it_is():
    """Qwen2.5's template concatenates content as a string and raises; Qwen3's (npm 3.7.2) calls a string method on it."""
    stops = ("DS009", "template-error", None, None, "the run will not start: TRL's SFTTrainer renders every row in one "
             "datasets.map while it is built, and the template raises on 1 of the 1 rows checked (first: row 0); one "
             "such row stops it")
    qwen25 = inspect(DATASETS / "content_parts.jsonl", QWEN25)
    assert findings(qwen25.stdout) == [
        ("DS009", "template-error", 0, 1, 'the chat template raised: TypeError: can only concatenate str (not "list") to str'),
        stops,
    ]
    qwen3 = inspect(DATASETS / "content_parts.jsonl", QWEN3)
    assert findings(qwen3.stdout) == [
        ("DS009", "template-error", 0, 1, "the chat template raised: UndefinedError: 'list object' has no attribute 'startswith'"),
        stops,
    ]


def test_a_50_mb_jsonl_row_is_skipped_unread_and_memory_stays_bounded(tmp_path):
    big = {"messages": [{"role": "user", "content": "lorem ipsum " * (50 * 2**20 // 12)}, {"role": "assistant", "content": "ok"}]}
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps(big) + "\n" + json.dumps(OK_ROW) + "\n")
    size = len(path.read_bytes().split(b"\n")[0])
    with unchanged(path):
        code, stdout, stderr, peak_mib = run_cli_process("inspect-data", path, "-t", QWEN25, "--all", "-f", "json")
    assert code == 1, stderr
    assert size > 50 * 2**20
    assert findings(stdout) == [
        ("DS010", "invalid-messages", 0, 1, f"row is {size:,} bytes long, over the 8 MiB mldebug inspects per row")
    ]
    assert json.loads(stdout)["summary"]["rows_checked"] == 2
    assert peak_mib < 1024, peak_mib  # rendering and tokenizing the row would take several GiB


def test_a_50_mb_element_of_a_json_array_is_a_finding(tmp_path):
    big = json.dumps({"text": "x" * (50 * 2**20)})
    path = tmp_path / "big.json"
    path.write_text("[\n" + json.dumps(OK_ROW) + ",\n" + big + "\n]\n")
    result = inspect(path)
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        ("DS010", "invalid-messages", 1, 3, f"row is {len(big):,} characters long, over the 8 MiB mldebug inspects per row")
    ]


def test_deeply_nested_jsonl_lines_are_findings(tmp_path):
    path = tmp_path / "deep.jsonl"
    too_deep_to_parse = "[" * 100_000 + "]" * 100_000
    nested = {"messages": OK_ROW["messages"], "meta": _nested(MAX_DEPTH)}  # the row object adds one level
    within = {"messages": OK_ROW["messages"], "meta": _nested(MAX_DEPTH - 2)}
    path.write_text("\n".join([too_deep_to_parse, json.dumps(nested), json.dumps(within)]) + "\n")
    result = inspect(path)
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        ("DS010", "invalid-messages", 0, 1, "JSON nested too deeply"),
        ("DS010", "invalid-messages", 1, 2, "row is nested more than 100 levels deep"),
    ]
    assert json.loads(result.stdout)["summary"]["rows_failed"] == 2


def test_a_json_array_element_nested_too_deeply_to_parse_is_a_finding_and_the_rest_is_checked(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[\n" + json.dumps(OK_ROW) + ",\n" + "[" * 100_000 + "]" * 100_000 + ",\n" + json.dumps(OK_ROW) + "\n]")
    result = inspect(path)
    assert result.exit_code == 1
    assert findings(result.stdout) == [("DS010", "invalid-messages", 1, 3, "JSON nested too deeply")]
    assert json.loads(result.stdout)["summary"]["rows_checked"] == 3


def test_parquet_rows_over_the_size_limit_are_findings(tmp_path):
    import datasets

    path = tmp_path / "big.parquet"
    datasets.Dataset.from_list([{"text": "What is 2 + 2? 4"}, {"text": "x" * (MAX_ROW_BYTES + 1)}]).to_parquet(str(path))
    result = inspect(path)
    assert result.exit_code == 1
    assert findings(result.stdout) == [
        ("DS010", "invalid-messages", 1, None, "row holds over 8 MiB of text, more than mldebug inspects per row")
    ]


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value
