"""Corrupt GGUF files through `mldebug render --gguf` and `check-template --deploy`: one line naming the byte.

The reader's own hardening (every truncation point, random corruption) is tested in tests/sources/test_gguf_file.py;
these are the same failures seen from the command line.
"""

from __future__ import annotations

import pytest

from outcomes import HOSTILE, assert_one_line_error, run_cli, unchanged
from support import QWEN25

GGUF = HOSTILE / "gguf"
MESSAGES = HOSTILE / "messages.json"
CASES = [
    ("truncated.gguf", "corrupt GGUF: file ends inside the metadata (truncated) (at byte 249)"),
    ("billions_of_tokens.gguf", "corrupt GGUF: array tokenizer.ggml.tokens claims 3000000000 entries, more than the "
     "317 bytes left can hold (at byte 195)"),
    ("billions_of_keys.gguf", "corrupt GGUF: the metadata table claims 4611686018427387904 entries, more than the "
     "488 bytes left can hold (at byte 24)"),
    ("not_gguf.gguf", "not a GGUF file (starts with b'PK\\x03\\x04', expected b'GGUF')"),
]


@pytest.mark.parametrize(("name", "message"), CASES)
def test_render_names_the_file_and_the_byte(name, message):
    path = GGUF / name
    with unchanged(path):
        result = run_cli("render", "--gguf", path, "-m", MESSAGES)
    assert_one_line_error(result.exit_code, result.stderr, f"{path}: {message}")


@pytest.mark.parametrize(("name", "message"), CASES)
def test_check_template_names_the_file_and_the_byte(name, message):
    path = GGUF / name
    with unchanged(path):
        result = run_cli("check-template", "--train", QWEN25, "--deploy", path)
    assert_one_line_error(result.exit_code, result.stderr, f"{path}: {message}")
