"""encoding/json's Marshal as Ollama's templates call it (the ``json`` function)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from typing import Any

from mldebug_cli.render.gotemplate.errors import TemplateFuncError
from mldebug_cli.render.gotemplate.fmt import (
    _float_digits,
    _format_exponent,
    _format_fixed,
    _format_float_v,
    _sorted_keys,
)
from mldebug_cli.render.gotemplate.values import GoStruct, _go_kind, _go_type_name


def go_json(value: Any) -> str:
    """encoding/json.Marshal: compact, map keys sorted, <>& and U+2028/9 escaped, Go float format.

    Raises TemplateFuncError for values JSON cannot hold (NaN, infinities).
    """
    out: list[str] = []
    _encode_json(value, out)
    return "".join(out)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_JSON_HTML = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch in _JSON_ESCAPES:
            out.append(_JSON_ESCAPES[ch])
        elif ch in _JSON_HTML:
            out.append(_JSON_HTML[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append("\\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _json_float(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        raise TemplateFuncError(f"json: unsupported value: {_format_float_v(value)}")
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    digits, point = _float_digits(abs(value))
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        body = _format_exponent(digits, point)
        body = re.sub(r"e([+-])0(\d)$", r"e\g<1>\g<2>", body)
    else:
        body = _format_fixed(digits, point)
    return ("-" if value < 0 else "") + body


def _is_empty_json(value: Any) -> bool:
    if isinstance(value, GoStruct):
        return False  # omitempty never omits structs
    return value is None or value is False or value == 0 or (hasattr(value, "__len__") and len(value) == 0)


def _encode_json(value: Any, out: list[str]) -> None:
    custom = getattr(value, "go_marshal_json", None)
    if callable(custom):
        value = custom()
    kind = _go_kind(value)
    if kind == "invalid":
        out.append("null")
    elif kind == "bool":
        out.append("true" if value else "false")
    elif kind == "int":
        out.append(str(value))
    elif kind == "float":
        out.append(_json_float(value))
    elif kind == "string":
        out.append(_json_string(value))
    elif kind == "slice":
        _encode_json_items(value, out)
    elif kind == "map":
        _encode_json_object([(str(k), value[k]) for k in _sorted_keys(value)], out)
    elif isinstance(value, GoStruct):
        _encode_json_object(_struct_json_pairs(value), out)
    else:
        raise TemplateFuncError(f"json: unsupported type: {_go_type_name(value)}")


def _encode_json_items(items: Sequence[Any], out: list[str]) -> None:
    out.append("[")
    for i, item in enumerate(items):
        if i:
            out.append(",")
        _encode_json(item, out)
    out.append("]")


def _encode_json_object(pairs: list[tuple[str, Any]], out: list[str]) -> None:
    out.append("{")
    for i, (key, item) in enumerate(pairs):
        if i:
            out.append(",")
        out.append(_json_string(key))
        out.append(":")
        _encode_json(item, out)
    out.append("}")


def _struct_json_pairs(value: GoStruct) -> list[tuple[str, Any]]:
    pairs = []
    for f in dataclasses.fields(value):  # type: ignore[arg-type]
        name, omitempty = f.metadata.get("json", (f.name, False))
        item = getattr(value, f.name)
        if name != "-" and not (omitempty and _is_empty_json(item)):
            pairs.append((name, item))
    return pairs
