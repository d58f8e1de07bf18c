"""Go's fmt for templates: %v printing of values, printf verbs, and the html/js/urlquery escapers."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from mldebug_cli.render.gotemplate.errors import TemplateLimitError
from mldebug_cli.render.gotemplate.values import GoStruct, _go_kind, _go_type_name


def _float_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of a positive finite float and the decimal point position."""
    _, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return text, len(text) + int(exponent)


def _format_exponent(digits: str, point: int, upper: bool = False) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp = point - 1
    return f"{mantissa}{'E' if upper else 'e'}{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _format_fixed(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _special_float(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return None


def _format_float_v(value: float) -> str:
    """Go's %v for a float64 (strconv 'g', shortest): exponent form when exp < -4 or exp >= 6."""
    special = _special_float(value)
    if special is not None:
        return special
    negative = value < 0 or (value == 0 and math.copysign(1, value) < 0)
    return ("-" if negative else "") + _shortest_g(abs(value), upper=False)


def _shortest_g(value: float, upper: bool) -> str:
    if value == 0:
        return "0"
    digits, point = _float_digits(value)
    exp = point - 1
    if exp < -4 or exp >= 6:  # strconv uses precision 6 for this decision when the precision is shortest
        return _format_exponent(digits, point, upper)
    return _format_fixed(digits, point)


def _fmt_value(value: Any, depth: int = 0) -> str:
    """fmt's %v rendering of a value (Stringers use their String())."""
    if value is None:
        return "<nil>"
    go_string = getattr(value, "go_string", None)
    if callable(go_string):
        return go_string()
    kind = _go_kind(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "int":
        return str(value)
    if kind == "float":
        return _format_float_v(value)
    if kind == "string":
        return value
    if kind == "slice":
        return "[" + " ".join(_fmt_value(item, depth + 1) for item in value) + "]"
    if kind == "map":
        pairs = (f"{_fmt_value(k, depth + 1)}:{_fmt_value(value[k], depth + 1)}" for k in _sorted_keys(value))
        return "map[" + " ".join(pairs) + "]"
    if isinstance(value, GoStruct):
        body = "{" + " ".join(_fmt_value(v, depth + 1) for _, v in value.go_fields()) + "}"
        return ("&" if value.go_pointer and depth == 0 else "") + body
    return str(value)


def _sorted_keys(mapping: Mapping[Any, Any]) -> list[Any]:
    try:
        return sorted(mapping)
    except TypeError:  # mixed key types: order by type then text, like fmtsort's fallback
        return sorted(mapping, key=lambda k: (type(k).__name__, str(k)))


def _sprint(args: Sequence[Any]) -> str:
    """fmt.Sprint: a space between operands when neither side is a string."""
    out: list[str] = []
    previous_is_string = False
    for i, arg in enumerate(args):
        is_string = isinstance(arg, str)
        if i > 0 and not is_string and not previous_is_string:
            out.append(" ")
        out.append(_fmt_value(arg))
        previous_is_string = is_string
    return "".join(out)


def _go_is_print(ch: str) -> bool:
    return ch == " " or (ch.isprintable() and not ch.isspace())


def _go_quote(text: str) -> str:
    """strconv.Quote: a double-quoted Go string literal."""
    out = ['"']
    simple = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _go_is_print(ch):
            out.append(ch)
        elif ch in simple:
            out.append(simple[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)



_PRINTF_SPEC = re.compile(r"%([-+# 0]*)(\d+|\*)?(?:\.(\d*|\*))?(.?)", re.DOTALL)


@dataclass(frozen=True)
class _Spec:
    flags: str
    width: int | None
    precision: int | None
    verb: str


def _sprintf(format_: str, args: Sequence[Any], max_width: int) -> str:
    """fmt.Sprintf for the verbs templates use, with Go's %!verb(type=value) error forms."""
    out: list[str] = []
    remaining = list(args)
    pos = 0
    while True:
        start = format_.find("%", pos)
        if start < 0:
            out.append(format_[pos:])
            break
        out.append(format_[pos:start])
        match = _PRINTF_SPEC.match(format_, start)
        assert match is not None  # the pattern matches any "%..." prefix
        pos = match.end()
        flags, width_text, precision_text, verb = match.groups()
        if not verb:
            out.append("%!(NOVERB)")
            break
        if verb == "%":
            out.append("%")
            continue
        width = _printf_number(width_text, remaining, max_width)
        precision = _printf_number(precision_text, remaining, max_width) if precision_text is not None else None
        if precision_text == "":
            precision = 0
        if not remaining:
            out.append(f"%!{verb}(MISSING)")
            continue
        out.append(_format_arg(remaining.pop(0), _Spec(flags, width, precision, verb)))
    if remaining:
        extra = ", ".join(f"{_go_type_name(a)}={_fmt_value(a)}" if a is not None else "<nil>" for a in remaining)
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _printf_number(text: str | None, remaining: list[Any], max_width: int) -> int | None:
    if text is None or text == "":
        return None
    if text == "*":
        value = remaining.pop(0) if remaining else None
        number = value if isinstance(value, int) and not isinstance(value, bool) else 0
    else:
        number = int(text)
    if number > max_width:
        raise TemplateLimitError(f"printf width or precision {number} exceeds the output limit")
    return number


def _bad_verb(value: Any, verb: str) -> str:
    if value is None:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({_go_type_name(value)}={_fmt_value(value)})"


def _pad(text: str, spec: _Spec, numeric: bool = False) -> str:
    if spec.width is None or len(text) >= spec.width:
        return text
    fill = spec.width - len(text)
    if "-" in spec.flags:
        return text + " " * fill
    if numeric and "0" in spec.flags:
        sign = text[0] if text[:1] in ("+", "-", " ") else ""
        return sign + "0" * fill + text[len(sign) :]
    return " " * fill + text


def _format_arg(value: Any, spec: _Spec) -> str:
    go_string = getattr(value, "go_string", None)
    if callable(go_string) and spec.verb in "vsqxX":
        value = go_string()
    kind = _go_kind(value)
    if kind == "slice" and spec.verb != "v":
        inner = _Spec(spec.flags, None, spec.precision, spec.verb)
        return _pad("[" + " ".join(_format_arg(item, inner) for item in value) + "]", spec)
    formatter = _FORMATTERS.get(kind)
    if spec.verb == "v" and formatter is None:
        return _pad(_fmt_value(value), spec)
    if formatter is None:
        return _bad_verb(value, spec.verb)
    return formatter(value, spec)


def _format_string(value: str, spec: _Spec) -> str:
    if spec.precision is not None and spec.verb in "sqv":
        value = value[: spec.precision]
    if spec.verb in "sv":
        return _pad(value, spec)
    if spec.verb == "q":
        return _pad(_go_quote(value), spec)
    if spec.verb in "xX":
        hexed = value.encode("utf-8").hex()
        return _pad(hexed.upper() if spec.verb == "X" else hexed, spec)
    return _bad_verb(value, spec.verb)


def _format_bool(value: bool, spec: _Spec) -> str:
    if spec.verb in "tv":
        return _pad("true" if value else "false", spec)
    return _bad_verb(value, spec.verb)


def _signed(text: str, negative: bool, flags: str) -> str:
    if negative:
        return "-" + text
    if "+" in flags:
        return "+" + text
    if " " in flags:
        return " " + text
    return text


def _format_int(value: int, spec: _Spec) -> str:
    verb, magnitude = spec.verb, abs(value)
    if verb in "dv":
        body = str(magnitude)
    elif verb == "b":
        body = format(magnitude, "b")
    elif verb == "o":
        body = ("0" if "#" in spec.flags else "") + format(magnitude, "o")
    elif verb == "O":
        body = "0o" + format(magnitude, "o")
    elif verb in "xX":
        body = ("0x" if "#" in spec.flags else "") + format(magnitude, "x")
        body = body.upper() if verb == "X" else body
    elif verb == "c":
        return _pad(_rune(value), spec)
    elif verb == "q":
        return _pad("'" + _go_quote(_rune(value))[1:-1].replace("'", "\\'").replace('\\"', '"') + "'", spec)
    elif verb == "U":
        return _pad(f"U+{value:04X}", spec)
    else:
        return _bad_verb(value, verb)
    return _pad(_signed(body, value < 0, spec.flags), spec, numeric=True)


def _rune(value: int) -> str:
    return chr(value) if 0 <= value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else "\ufffd"


def _format_float(value: float, spec: _Spec) -> str:
    verb = spec.verb
    if verb not in "vfFeEgG":
        return _bad_verb(value, verb)
    special = _special_float(value)
    if special is not None:
        return _pad(special, spec)  # Go keeps the sign of infinities
    magnitude = abs(value)
    if verb in "vgG" and spec.precision is None:
        text = _shortest_g(magnitude, upper=verb == "G")
    elif verb in "fF":
        text = f"{magnitude:.{6 if spec.precision is None else spec.precision}f}"
    elif verb in "eE":
        text = f"{magnitude:.{6 if spec.precision is None else spec.precision}{verb}}"
    else:
        text = f"{magnitude:.{max(spec.precision or 0, 1)}{'G' if verb == 'G' else 'g'}}"
    negative = value < 0 or (value == 0 and math.copysign(1, value) < 0)
    return _pad(_signed(text, negative, spec.flags), spec, numeric=True)




def _html_escape(text: str) -> str:
    """template.HTMLEscapeString."""
    table = {"\0": "\ufffd", '"': "&#34;", "'": "&#39;", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
    return "".join(table.get(ch, ch) for ch in text)


def _js_escape(text: str) -> str:
    """template.JSEscapeString."""
    table = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026", "=": "\\u003D"}
    out = []
    for ch in text:
        if ch in table:
            out.append(table[ch])
        elif ord(ch) < 0x20 or (ord(ch) >= 0x80 and not _go_is_print(ch)):
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def _url_query_escape(text: str) -> str:
    """url.QueryEscape: spaces become '+', everything but unreserved characters is %XX."""
    out = []
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch.isascii() and (ch.isalnum() or ch in "-_.~"):
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


_FORMATTERS: dict[str, Callable[[Any, _Spec], str]] = {
    "string": _format_string, "bool": _format_bool, "int": _format_int, "float": _format_float,
}
