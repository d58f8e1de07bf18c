"""A ``.safetensors`` file's header checked before transformers maps the file: the 8-byte little-endian header
length, a JSON object of tensors, each with a known dtype, a shape of whole numbers and ``data_offsets`` that lie in
the data and match the shape. A header that lies (a length past the file, offsets past the end, overlapping or
negative, a shape larger than its bytes) is a one-line error naming the file and tensor, never a crash or a huge
allocation. Reads at most the header (capped at 100 MB, as the safetensors library caps it)."""

from __future__ import annotations

import json
import math
import os
import struct
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import open_regular

MAX_HEADER_BYTES = 100_000_000  # the safetensors library's own limit
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8}


def check_header(path: str | os.PathLike) -> int:
    """The number of tensors in ``path``'s header; InputError when the header does not describe the file."""
    path = Path(path)
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if len(head) < 8:
            raise InputError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        (length,) = struct.unpack("<Q", head)
        if length > min(MAX_HEADER_BYTES, size - 8):
            raise InputError(f"{path}: the safetensors header claims {length:,} bytes; the file has {size - 8:,} after "
                             "the length" + (" (over the 100 MB header limit)" if length > MAX_HEADER_BYTES else ""))
        raw = fh.read(length)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: the safetensors header is not JSON ({in_one_line(exc, 120)})") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: the safetensors header is not a JSON object")
    data = size - 8 - length
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise InputError(f"{path}: __metadata__ must map names to strings")
            continue
        spans.append(_tensor_span(path, name, entry, data))
    spans.sort()
    for (_start, end, name), (next_start, _, next_name) in zip(spans, spans[1:]):
        if next_start < end:
            raise InputError(f"{path}: tensors {name!r} and {next_name!r} overlap in the data")
    return len(spans)


def _tensor_span(path: Path, name: str, entry: Any, data: int) -> tuple[int, int, str]:
    where = f"{path}: tensor {name[:80]!r}"
    if not isinstance(entry, dict):
        raise InputError(f"{where}: not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise InputError(f"{where}: unknown dtype {str(dtype)[:40]!r}")
    if not isinstance(shape, list) or not all(_whole(d) and d >= 0 for d in shape) or len(shape) > 64:
        raise InputError(f"{where}: shape must be a list of whole numbers of at most 64 dimensions")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(_whole(o) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= data):
        raise InputError(f"{where}: data_offsets {str(offsets)[:60]} do not lie in the {data:,} bytes of data")
    expected = math.prod(shape) * DTYPE_BYTES[dtype]
    if offsets[1] - offsets[0] != expected:
        raise InputError(f"{where}: shape {shape[:8]} of {dtype} needs {expected:,} bytes; data_offsets give "
                         f"{offsets[1] - offsets[0]:,}")
    return offsets[0], offsets[1], name


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
