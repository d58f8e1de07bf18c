"""Issue 36 item 7: a model.safetensors whose header lies is a one-line error naming the file (and tensor) before
transformers maps it: probe checks every .safetensors of the model and adapter folders with this reader."""

from __future__ import annotations

import json
import struct

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.safetensors_header import check_header


def _file(tmp_path, header, data: bytes = b"\0" * 16, length: int | None = None):
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw) if length is None else length) + raw + data)
    return path


def test_a_file_written_by_safetensors_passes(tmp_path):
    numpy = pytest.importorskip("numpy")
    from safetensors.numpy import save_file

    path = tmp_path / "model.safetensors"
    save_file({"a": numpy.zeros((2, 3), dtype=numpy.float32), "b": numpy.ones(5, dtype=numpy.int64)}, str(path),
              metadata={"format": "pt"})
    assert check_header(path) == 2


T = {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}
LIES = [
    ("length past the file", {"w": T}, None, 10**12, "the safetensors header claims 1,000,000,000,000 bytes"),
    ("not JSON", b"{not json", None, None, "the safetensors header is not JSON"),
    ("not an object", [1, 2], None, None, "the safetensors header is not a JSON object"),
    ("unknown dtype", {"w": {**T, "dtype": "F128"}}, None, None, "tensor 'w': unknown dtype 'F128'"),
    ("negative dim", {"w": {**T, "shape": [-2, 2]}}, None, None, "tensor 'w': shape must be a list of whole numbers"),
    ("float dim", {"w": {**T, "shape": [2.0, 2]}}, None, None, "tensor 'w': shape must be a list of whole numbers"),
    ("offsets past the end", {"w": {**T, "data_offsets": [0, 10**15]}}, None, None, "do not lie in the 16 bytes"),
    ("offsets reversed", {"w": {**T, "data_offsets": [16, 0]}}, None, None, "do not lie in the 16 bytes"),
    ("shape larger than its bytes", {"w": {**T, "shape": [10**9, 10**9]}}, None, None,
     "needs 4,000,000,000,000,000,000 bytes; data_offsets give 16"),
    ("overlap", {"w": {**T, "shape": [2], "data_offsets": [0, 8]}, "v": {**T, "shape": [2], "data_offsets": [4, 12]}},
     None, None, "tensors 'w' and 'v' overlap in the data"),
    ("bad metadata", {"__metadata__": {"a": 1}, "w": T}, None, None, "__metadata__ must map names to strings"),
    ("too short", None, b"", None, "not a safetensors file"),
]


@pytest.mark.parametrize(("lie", "header", "data", "length", "message"), LIES, ids=[c[0] for c in LIES])
def test_every_header_lie_is_a_one_line_error_naming_the_file(tmp_path, lie, header, data, length, message):
    if header is None:
        path = tmp_path / "model.safetensors"
        path.write_bytes(b"\x01\x02")
    else:
        path = _file(tmp_path, header, b"\0" * 16 if data is None else data, length)
    with pytest.raises(InputError) as raised:
        check_header(path)
    assert raised.value.message.startswith(f"{path}: ") and message in raised.value.message
