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


def _gguf_with_string_array(path, key: bytes, count: int, item: bytes = b"") -> None:
    """A GGUF v3 file of one metadata key: an array of ``count`` copies of the string ``item`` (written, not claimed)."""
    import struct

    element = struct.pack("<Q", len(item)) + item
    with open(path, "wb") as fh:
        fh.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", len(key)) + key)
        fh.write(struct.pack("<IIQ", 9, 8, count))  # ARRAY of STRING
        for _ in range(0, count, 1 << 20):
            fh.write(element * min(1 << 20, count - _))


@pytest.mark.parametrize("key", [b"tokenizer.ggml.tokens", b"tokenizer.ggml.merges"])
def test_a_string_array_of_millions_of_items_is_refused_before_it_is_walked(tmp_path, key):
    """Issue 36: a GGUF claiming (and holding) more strings than any vocabulary, decoded or stepped over: one line."""
    from mldebug_cli.sources.gguf_file import MAX_STRING_ARRAY_ITEMS

    path = tmp_path / "many.gguf"
    _gguf_with_string_array(path, key, MAX_STRING_ARRAY_ITEMS + 1)
    with unchanged(path):
        result = run_cli("render", "--gguf", path, "-m", MESSAGES)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}: corrupt GGUF: array {key.decode()} claims {MAX_STRING_ARRAY_ITEMS + 1:,} entries; "
                          f"mldebug reads at most {MAX_STRING_ARRAY_ITEMS:,} (no real vocabulary or merge list comes "
                          f"near) (at byte {4 + 4 + 8 + 8 + 8 + len(key) + 4 + 4})")


def test_the_text_of_a_decoded_string_array_is_bounded(tmp_path, monkeypatch):
    """The vocabulary's text is counted as it is decoded (the bound lowered to 1 MiB here, so the file stays small)."""
    from mldebug_cli.sources import gguf_file

    monkeypatch.setattr(gguf_file, "MAX_DECODED_STRING_BYTES", 2**20)
    path = tmp_path / "long.gguf"
    _gguf_with_string_array(path, b"tokenizer.ggml.tokens", 2**12, b"x" * 512)
    with pytest.raises(gguf_file.InputError, match=r"array tokenizer.ggml.tokens holds over 1 MiB of text"):
        gguf_file.read_gguf_vocab(path)
