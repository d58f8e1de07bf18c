"""Just enough protobuf wire-format decoding to read scalar summaries (TensorBoard) and history records (W&B)."""

from __future__ import annotations

import struct
from collections.abc import Iterator


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message."""


def varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("varint runs past the message")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def fields(data: bytes, expected: dict[int, tuple[int, ...]] | None = None) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value): int for varint, bytes for the others.

    ``expected`` maps the field numbers a reader uses to the wire types it can take: one of another type (a
    float where a string should be) is a WireError, never a value of the wrong kind handed on."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = varint(data, pos)
        elif wire == 1:
            if pos + 8 > end:
                raise WireError("fixed64 runs past the message")
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = varint(data, pos)
            if pos + length > end:
                raise WireError("length-delimited field runs past the message")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 5:
            if pos + 4 > end:
                raise WireError("fixed32 runs past the message")
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise WireError(f"unsupported wire type {wire}")
        if expected is not None and number in expected and wire not in expected[number]:
            raise WireError(f"field {number} has wire type {wire}, expected {' or '.join(map(str, expected[number]))}")
        yield number, wire, value


def as_bytes(value: int | bytes) -> bytes:
    """A length-delimited or fixed field's bytes (a varint where bytes belong is a WireError)."""
    if isinstance(value, int):
        raise WireError("a varint where a length-delimited or fixed field belongs")
    return value


def as_int(value: int | bytes) -> int:
    """A varint field's value (bytes where a varint belongs is a WireError)."""
    if not isinstance(value, int):
        raise WireError("a length-delimited or fixed field where a varint belongs")
    return value


def as_float32(raw: bytes) -> float:
    return struct.unpack("<f", raw)[0]


def as_double(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value
