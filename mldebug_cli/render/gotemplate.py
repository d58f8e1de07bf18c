"""A Go text/template interpreter for the subset Ollama chat templates use.

Parsing follows Go's text/template/parse (trim markers, comments, variable scoping, else-if/else-with
chains, define/template/block, break/continue); execution follows text/template's exec.go and funcs.go
(truthiness, missing map keys, comparisons between kinds, and/or short-circuit, fmt-style printing and
printf verbs). Values are Python data read as Go values: None is nil, bool/int/float/str are Go's basic
kinds, list/tuple are slices, dict is a map with string keys, and GoStruct subclasses are structs.
Hard limits on output size, steps and call depth stop hostile templates.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar

from mldebug_cli.core.errors import InputError

# ---------------------------------------------------------------------------------------------- errors


class TemplateError(InputError):
    """A Go template that cannot be parsed or executed; the message names line:col."""


class TemplateSyntaxError(TemplateError):
    """The template text is not valid Go template syntax."""


class TemplateExecError(TemplateError):
    """Executing the template failed the way Go's text/template fails at run time."""


class TemplateLimitError(TemplateExecError):
    """Execution exceeded a hard limit (output size, steps or template call depth)."""


class TemplateFuncError(Exception):
    """Raised by a template function; reported as Go's "error calling NAME: ..."."""


def _line_col(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    return line, pos - (source.rfind("\n", 0, pos) + 1) + 1


# ---------------------------------------------------------------------------------------------- values


class GoStruct:
    """Base for Go struct values. Subclasses are frozen dataclasses whose fields are the Go fields.

    A field's JSON tag goes in its metadata: ``field(default="", metadata=json_tag("role"))``.
    ``go_methods`` maps Go method names to callables taking the struct (and any template arguments).
    A subclass with a Go ``String()`` method defines ``go_string``.
    """

    go_type: ClassVar[str] = "struct"
    go_pointer: ClassVar[bool] = False  # printed as &{...}, like a Go pointer to a struct
    go_methods: ClassVar[Mapping[str, Callable[..., Any]]] = {}

    def go_fields(self) -> list[tuple[str, Any]]:
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)]  # type: ignore[arg-type]


def json_tag(name: str, omitempty: bool = False) -> dict[str, Any]:
    """Field metadata giving a GoStruct field's JSON name, like Go's `json:"name,omitempty"` tag."""
    return {"json": (name, omitempty)}


def _go_kind(value: Any) -> str:
    if value is None:
        return "invalid"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "slice"
    if isinstance(value, dict):
        return "map"
    return "struct"


def _go_type_name(value: Any) -> str:
    """The Go type name Go would print for this value in error messages and %!verb(type=value)."""
    if isinstance(value, GoStruct):
        return value.go_type
    explicit = getattr(value, "go_type", None)
    if isinstance(explicit, str):
        return explicit
    return {
        "invalid": "<nil>",
        "bool": "bool",
        "int": "int",
        "float": "float64",
        "string": "string",
        "slice": "[]interface {}",
        "map": "map[string]interface {}",
    }.get(_go_kind(value), type(value).__name__)


def is_true(value: Any) -> bool:
    """Go template truthiness: false, 0, nil and empty strings, slices and maps are false."""
    kind = _go_kind(value)
    if kind == "invalid":
        return False
    if kind in ("bool", "int", "float"):
        return value != 0
    if kind in ("string", "slice", "map"):
        return len(value) > 0
    return True  # structs are always true


# --------------------------------------------------------------------------------------- fmt printing


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


# ----------------------------------------------------------------------------------------------- printf

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
    formatter = {"string": _format_string, "bool": _format_bool, "int": _format_int, "float": _format_float}.get(kind)
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


# --------------------------------------------------------------------------------------------- escapers


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


# ------------------------------------------------------------------------------------------------ JSON


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


# ---------------------------------------------------------------------------------------------- lexer

_SPACE = " \t\r\n"
_KEYWORDS = {"block", "break", "continue", "define", "else", "end", "if", "range", "template", "with"}


@dataclass(frozen=True)
class _Token:
    kind: str  # text, left, right, space, field, variable, identifier, keyword, dot, nil, bool, number,
    #            char_constant, string, raw_string, lparen, rparen, pipe, assign, declare, char, eof
    value: str
    pos: int


def _is_alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdecimal()


class _Lexer:
    """Splits template source into tokens, applying trim markers and dropping comments."""

    def __init__(self, source: str) -> None:
        self.src = source
        self.tokens: list[_Token] = []

    def fail(self, pos: int, message: str) -> TemplateSyntaxError:
        line, col = _line_col(self.src, pos)
        return TemplateSyntaxError(f"template line {line}:{col}: {message}")

    def run(self) -> list[_Token]:
        src, pos, trim_leading = self.src, 0, False
        while True:
            delim = src.find("{{", pos)
            end = len(src) if delim < 0 else delim
            start = pos
            if trim_leading:
                while start < end and src[start] in _SPACE:
                    start += 1
            stop = end
            if delim >= 0 and self._left_trim_at(delim + 2):
                while stop > start and src[stop - 1] in _SPACE:
                    stop -= 1
            if stop > start:
                self.tokens.append(_Token("text", src[start:stop], start))
            if delim < 0:
                break
            pos, trim_leading = self._lex_action(delim)
        self.tokens.append(_Token("eof", "", len(src)))
        return self.tokens

    def _left_trim_at(self, pos: int) -> bool:
        return self.src.startswith("-", pos) and pos + 1 < len(self.src) and self.src[pos + 1] in _SPACE

    def _right_delim_at(self, pos: int) -> tuple[bool, bool]:
        """(a right delimiter starts here, it carries a trim marker)."""
        src = self.src
        if pos + 1 < len(src) and src[pos] in _SPACE and src[pos + 1] == "-" and src.startswith("}}", pos + 2):
            return True, True
        return src.startswith("}}", pos), False

    def _lex_action(self, delim: int) -> tuple[int, bool]:
        pos = delim + 2
        if self._left_trim_at(pos):
            pos += 2
        if self.src.startswith("/*", pos):
            return self._lex_comment(delim, pos)
        self.tokens.append(_Token("left", "{{", delim))
        paren_depth = 0
        while True:
            at_delim, trim = self._right_delim_at(pos)
            if at_delim:
                if paren_depth:
                    raise self.fail(pos, "unclosed left paren")
                self.tokens.append(_Token("right", "}}", pos))
                return pos + (2 if trim else 0) + 2, trim
            if pos >= len(self.src):
                raise self.fail(delim, "unclosed action")
            pos, paren_depth = self._lex_inside(pos, paren_depth)

    def _lex_comment(self, delim: int, pos: int) -> tuple[int, bool]:
        end = self.src.find("*/", pos + 2)
        if end < 0:
            raise self.fail(delim, "unclosed comment")
        pos = end + 2
        at_delim, trim = self._right_delim_at(pos)
        if not at_delim:
            raise self.fail(pos, "comment ends before closing delimiter")
        return pos + (2 if trim else 0) + 2, trim

    def _emit(self, kind: str, start: int, end: int) -> int:
        self.tokens.append(_Token(kind, self.src[start:end], start))
        return end

    def _lex_inside(self, pos: int, paren_depth: int) -> tuple[int, int]:
        src, ch = self.src, self.src[pos]
        if ch in _SPACE:
            end = pos
            while end < len(src) and src[end] in _SPACE and not self._right_delim_at(end)[1]:
                end += 1
            return self._emit("space", pos, max(end, pos + 1)), paren_depth
        if ch == "=":
            return self._emit("assign", pos, pos + 1), paren_depth
        if ch == ":":
            if not src.startswith(":=", pos):
                raise self.fail(pos, "expected :=")
            return self._emit("declare", pos, pos + 2), paren_depth
        if ch == "|":
            return self._emit("pipe", pos, pos + 1), paren_depth
        if ch == '"':
            return self._lex_quote(pos, '"', "string", "unterminated quoted string"), paren_depth
        if ch == "'":
            return self._lex_quote(pos, "'", "char_constant", "unterminated character constant"), paren_depth
        if ch == "`":
            end = src.find("`", pos + 1)
            if end < 0:
                raise self.fail(pos, "unterminated raw quoted string")
            return self._emit("raw_string", pos, end + 1), paren_depth
        if ch == "$":
            return self._lex_word(pos, "variable"), paren_depth
        if ch == "." and not (pos + 1 < len(src) and src[pos + 1].isdigit()):
            return self._lex_word(pos, "field"), paren_depth
        if ch in "+-." or ch.isdigit():
            return self._lex_number(pos), paren_depth
        if _is_alnum(ch):
            return self._lex_identifier(pos), paren_depth
        if ch == "(":
            return self._emit("lparen", pos, pos + 1), paren_depth + 1
        if ch == ")":
            if paren_depth == 0:
                raise self.fail(pos, "unexpected right paren")
            return self._emit("rparen", pos, pos + 1), paren_depth - 1
        if ch.isascii() and ch.isprintable():
            return self._emit("char", pos, pos + 1), paren_depth
        raise self.fail(pos, f"unrecognized character in action: U+{ord(ch):04X}")

    def _at_terminator(self, pos: int) -> bool:
        if pos >= len(self.src) or self.src[pos] in _SPACE or self.src[pos] in ".,|:()":
            return True
        return self.src.startswith("}}", pos)

    def _scan_alnum(self, pos: int) -> int:
        while pos < len(self.src) and _is_alnum(self.src[pos]):
            pos += 1
        return pos

    def _check_terminator(self, pos: int) -> None:
        if not self._at_terminator(pos):
            raise self.fail(pos, f"bad character U+{ord(self.src[pos]):04X} {self.src[pos]!r}")

    def _lex_word(self, pos: int, kind: str) -> int:
        """A field (.Name), a variable ($name), or a bare '.' / '$'."""
        if self._at_terminator(pos + 1):
            return self._emit("dot" if kind == "field" else "variable", pos, pos + 1)
        end = self._scan_alnum(pos + 1)
        self._check_terminator(end)
        return self._emit(kind, pos, end)

    def _lex_identifier(self, pos: int) -> int:
        end = self._scan_alnum(pos)
        self._check_terminator(end)
        word = self.src[pos:end]
        if word in _KEYWORDS:
            kind = "keyword"
        elif word in ("true", "false"):
            kind = "bool"
        elif word == "nil":
            kind = "nil"
        else:
            kind = "identifier"
        return self._emit(kind, pos, end)

    _NUMBER = re.compile(
        r"[+-]?(?:0[xX][0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?(?:[pP][+-]?[0-9_]+)?"
        r"|0[oO][0-7_]*(?:\.[0-7_]*)?|0[bB][01_]*(?:\.[01_]*)?"
        r"|[0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9_]+)?)i?"
    )

    def _lex_number(self, pos: int) -> int:
        match = self._NUMBER.match(self.src, pos)
        end = match.end() if match else pos
        if end == pos or (end < len(self.src) and _is_alnum(self.src[end])):
            bad_end = min(len(self.src), max(end, pos) + 1)
            raise self.fail(pos, f"bad number syntax: {self.src[pos:bad_end]!r}")
        return self._emit("number", pos, end)

    def _lex_quote(self, pos: int, quote: str, kind: str, unterminated: str) -> int:
        src, i = self.src, pos + 1
        while True:
            if i >= len(src) or src[i] == "\n":
                raise self.fail(pos, unterminated)
            if src[i] == "\\":
                i += 2
                continue
            if src[i] == quote:
                return self._emit(kind, pos, i + 1)
            i += 1


# ------------------------------------------------------------------------------------------ literals

_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}


def _unquote(literal: str) -> str:
    """strconv.Unquote for "...", '...' and `...` literals; raises ValueError on bad syntax."""
    quote, body = literal[0], literal[1:-1]
    if quote == "`":
        return body.replace("\r", "")
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        i, chunk = _unescape(body, i + 1, quote)
        out += chunk
    return out.decode("utf-8", errors="replace")


def _unescape(body: str, i: int, quote: str) -> tuple[int, bytes]:
    if i >= len(body):
        raise ValueError("invalid syntax")
    ch = body[i]
    if ch in _SIMPLE_ESCAPES:
        return i + 1, _SIMPLE_ESCAPES[ch].encode()
    if ch == quote:
        return i + 1, ch.encode()
    if ch == "x":
        return i + 3, bytes([_hex(body[i + 1 : i + 3], 2)])
    if ch in "01234567":
        digits = body[i : i + 3]
        if len(digits) != 3 or any(d not in "01234567" for d in digits) or int(digits, 8) > 255:
            raise ValueError("invalid syntax")
        return i + 3, bytes([int(digits, 8)])
    if ch in "uU":
        size = 4 if ch == "u" else 8
        code = _hex(body[i + 1 : i + 1 + size], size)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise ValueError("invalid syntax")
        return i + 1 + size, chr(code).encode("utf-8")
    raise ValueError("invalid syntax")


def _hex(text: str, size: int) -> int:
    if len(text) != size or any(c not in "0123456789abcdefABCDEF" for c in text):
        raise ValueError("invalid syntax")
    return int(text, 16)


def _parse_number(text: str, kind: str) -> int | float:
    """The value Go's idealConstant gives a number or character literal: int, or float64 when it looks like one."""
    if kind == "char_constant":
        value = _unquote(text)
        if len(value) != 1:
            raise ValueError(f"malformed character constant: {text}")
        return ord(value)
    if text.endswith("i"):
        raise ValueError(f"complex constants are not supported: {text}")
    digits = text.lstrip("+-")
    negative = text.startswith("-")
    is_hex = digits[:2].lower() == "0x"
    looks_float = any(c in digits for c in ".pP") or (not is_hex and any(c in digits for c in "eE"))
    if not looks_float:
        return _parse_int(digits, text) * (-1 if negative else 1)
    value = float.fromhex(digits.replace("_", "")) if is_hex else float(digits.replace("_", ""))
    return -value if negative else value


def _parse_int(digits: str, text: str) -> int:
    octal = re.fullmatch(r"0[0-7_]+", digits)  # Go's base 0 reads a leading zero as octal
    try:
        value = int(digits.replace("_", ""), 8) if octal else int(digits, 0)
    except ValueError:
        raise ValueError(f"illegal number syntax: {text!r}") from None
    if value >= 2**63:
        raise ValueError(f"{text} overflows int")
    return value


# ------------------------------------------------------------------------------------------------ nodes


@dataclass(frozen=True)
class ListNode:
    pos: int
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class TextNode:
    pos: int
    text: str


@dataclass(frozen=True)
class FieldNode:
    pos: int
    idents: tuple[str, ...]

    def __str__(self) -> str:
        return "." + ".".join(self.idents)


@dataclass(frozen=True)
class VariableNode:
    pos: int
    idents: tuple[str, ...]  # ("$x", "Field", ...)

    def __str__(self) -> str:
        return ".".join(self.idents)


@dataclass(frozen=True)
class IdentifierNode:
    pos: int
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DotNode:
    pos: int

    def __str__(self) -> str:
        return "."


@dataclass(frozen=True)
class NilNode:
    pos: int

    def __str__(self) -> str:
        return "nil"


@dataclass(frozen=True)
class BoolNode:
    pos: int
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class NumberNode:
    pos: int
    text: str
    value: int | float

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class StringNode:
    pos: int
    quoted: str
    text: str

    def __str__(self) -> str:
        return self.quoted


@dataclass(frozen=True)
class ChainNode:
    pos: int
    node: Node
    fields: tuple[str, ...]

    def __str__(self) -> str:
        inner = f"({self.node})" if isinstance(self.node, PipeNode) else str(self.node)
        return inner + "".join("." + f for f in self.fields)


@dataclass(frozen=True)
class CommandNode:
    pos: int
    args: tuple[Node, ...]

    def __str__(self) -> str:
        return " ".join(f"({a})" if isinstance(a, PipeNode) else str(a) for a in self.args)


@dataclass(frozen=True)
class PipeNode:
    pos: int
    decl: tuple[VariableNode, ...]
    is_assign: bool
    cmds: tuple[CommandNode, ...]

    def __str__(self) -> str:
        decl = ", ".join(str(v) for v in self.decl)
        prefix = f"{decl} {'=' if self.is_assign else ':='} " if decl else ""
        return prefix + " | ".join(str(c) for c in self.cmds)


@dataclass(frozen=True)
class ActionNode:
    pos: int
    pipe: PipeNode


@dataclass(frozen=True)
class IfNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class RangeNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class WithNode:
    pos: int
    pipe: PipeNode
    list: ListNode
    else_list: ListNode | None


@dataclass(frozen=True)
class BreakNode:
    pos: int


@dataclass(frozen=True)
class ContinueNode:
    pos: int


@dataclass(frozen=True)
class TemplateNode:
    pos: int
    name: str
    pipe: PipeNode | None


Node = (
    ListNode
    | TextNode
    | FieldNode
    | VariableNode
    | IdentifierNode
    | DotNode
    | NilNode
    | BoolNode
    | NumberNode
    | StringNode
    | ChainNode
    | CommandNode
    | PipeNode
    | ActionNode
    | IfNode
    | RangeNode
    | WithNode
    | BreakNode
    | ContinueNode
    | TemplateNode
)
BranchNode = IfNode | RangeNode | WithNode


@dataclass(frozen=True)
class _End:
    pos: int


@dataclass(frozen=True)
class _Else:
    pos: int


# ----------------------------------------------------------------------------------------------- parser

MAX_NESTING = 100  # control structures and parentheses; deeper templates are refused, not recursed into


class _Parser:
    def __init__(self, source: str, tokens: list[_Token], functions: Collection[str]) -> None:
        self.src = source
        self.tokens = tokens
        self.i = 0
        self.functions = functions
        self.vars = ["$"]
        self.range_depth = 0
        self.nesting = 0
        self.defined: dict[str, ListNode] = {}

    # token stream

    def next(self) -> _Token:
        token = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return token

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def next_non_space(self) -> _Token:
        token = self.next()
        while token.kind == "space":
            token = self.next()
        return token

    def peek_non_space(self) -> _Token:
        while self.tokens[self.i].kind == "space":
            self.i += 1
        return self.tokens[self.i]

    def backup(self) -> None:
        self.i -= 1

    def fail(self, pos: int, message: str) -> TemplateSyntaxError:
        line, col = _line_col(self.src, pos)
        return TemplateSyntaxError(f"template line {line}:{col}: {message}")

    def unexpected(self, token: _Token, context: str) -> TemplateSyntaxError:
        shown = "EOF" if token.kind == "eof" else f"<{token.value}>"
        return self.fail(token.pos, f"unexpected {shown} in {context}")

    def expect(self, kind: str, context: str) -> _Token:
        token = self.next_non_space()
        if token.kind != kind:
            raise self.unexpected(token, context)
        return token

    # top level

    def parse(self) -> tuple[ListNode, dict[str, ListNode]]:
        nodes: list[Node] = []
        while self.peek().kind != "eof":
            if self.peek().kind == "left":
                start = self.i
                self.next()
                token = self.next_non_space()
                if token.kind == "keyword" and token.value == "define":
                    self.parse_definition()
                    continue
                self.i = start
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                raise self.fail(node.pos, f"unexpected {{{{{'end' if isinstance(node, _End) else 'else'}}}}}")
            nodes.append(node)
        return ListNode(0, tuple(nodes)), self.defined

    def parse_definition(self) -> None:
        context = "define clause"
        name_token = self.next_non_space()
        if name_token.kind not in ("string", "raw_string"):
            raise self.unexpected(name_token, context)
        name = self.unquote(name_token)
        self.expect("right", context)
        saved_vars, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        self.vars = saved_vars
        if not isinstance(end, _End):
            raise self.fail(end.pos, f"unexpected {{{{else}}}} in {context}")
        self.add_template(name, body)

    def add_template(self, name: str, body: ListNode) -> None:
        # Go keeps an earlier definition when the new one is empty, otherwise the later one wins.
        if name in self.defined and all(isinstance(n, TextNode) and not n.text.strip() for n in body.nodes):
            return
        self.defined[name] = body

    def item_list(self) -> tuple[ListNode, _End | _Else]:
        start = self.peek_non_space().pos
        nodes: list[Node] = []
        while self.peek_non_space().kind != "eof":
            node = self.text_or_action()
            if isinstance(node, (_End, _Else)):
                return ListNode(start, tuple(nodes)), node
            nodes.append(node)
        raise self.fail(len(self.src), "unexpected EOF")

    def text_or_action(self) -> Node | _End | _Else:
        token = self.next_non_space()
        if token.kind == "text":
            return TextNode(token.pos, token.value)
        if token.kind == "left":
            return self.action()
        raise self.unexpected(token, "input")

    def action(self) -> Node | _End | _Else:
        token = self.next_non_space()
        if token.kind == "keyword":
            handler = {
                "block": self.block_control,
                "break": lambda: self.loop_control(token, BreakNode),
                "continue": lambda: self.loop_control(token, ContinueNode),
                "else": lambda: self.else_control(token),
                "end": lambda: _End(self.expect("right", "end").pos),
                "if": lambda: self.branch_control(token, "if", IfNode),
                "range": lambda: self.branch_control(token, "range", RangeNode),
                "template": self.template_control,
                "with": lambda: self.branch_control(token, "with", WithNode),
            }.get(token.value)
            if handler is not None:
                return handler()
        self.backup()
        return ActionNode(self.peek().pos, self.pipeline("command", "right"))

    # control structures

    def loop_control(self, token: _Token, node_type: type[BreakNode] | type[ContinueNode]) -> Node:
        after = self.next_non_space()
        if after.kind != "right":
            raise self.unexpected(after, f"{{{{{token.value}}}}}")
        if self.range_depth == 0:
            raise self.fail(token.pos, f"{{{{{token.value}}}}} outside {{{{range}}}}")
        return node_type(token.pos)

    def else_control(self, token: _Token) -> _Else:
        after = self.peek_non_space()
        if after.kind == "keyword" and after.value in ("if", "with"):
            return _Else(after.pos)  # "else if" / "else with": the keyword stays pending
        self.expect("right", "else")
        return _Else(token.pos)

    def branch_control(self, token: _Token, context: str, node_type: type[BranchNode]) -> Node:
        self.nesting += 1
        if self.nesting > MAX_NESTING:
            raise self.fail(token.pos, f"control structures nested deeper than {MAX_NESTING}")
        vars_mark = len(self.vars)
        try:
            pipe = self.pipeline(context, "right")
            if context == "range":
                self.range_depth += 1
            body, end = self.item_list()
            if context == "range":
                self.range_depth -= 1
            else_list = self.else_branch(context, node_type, end) if isinstance(end, _Else) else None
        finally:
            del self.vars[vars_mark:]
            self.nesting -= 1
        return node_type(token.pos, pipe, body, else_list)

    def else_branch(self, context: str, node_type: type[BranchNode], end: _Else) -> ListNode:
        after = self.peek()
        if context in ("if", "with") and after.kind == "keyword" and after.value == context:
            keyword = self.next()  # {{else if x}}...{{end}} is {{else}}{{if x}}...{{end}}{{end}}
            return ListNode(end.pos, (self.branch_control(keyword, context, node_type),))
        else_list, closing = self.item_list()
        if not isinstance(closing, _End):
            raise self.fail(closing.pos, "expected end; found {{else}}")
        return else_list

    def template_control(self) -> Node:
        context = "template clause"
        token = self.next_non_space()
        if token.kind not in ("string", "raw_string"):
            raise self.unexpected(token, context)
        name = self.unquote(token)
        pipe = None
        if self.next_non_space().kind != "right":
            self.backup()
            pipe = self.pipeline(context, "right")
        return TemplateNode(token.pos, name, pipe)

    def block_control(self) -> Node:
        context = "block clause"
        token = self.next_non_space()
        if token.kind not in ("string", "raw_string"):
            raise self.unexpected(token, context)
        name = self.unquote(token)
        pipe = self.pipeline(context, "right")
        saved_vars, saved_range, self.vars, self.range_depth = self.vars, self.range_depth, ["$"], 0
        body, end = self.item_list()
        self.vars, self.range_depth = saved_vars, saved_range
        if not isinstance(end, _End):
            raise self.fail(end.pos, f"unexpected {{{{else}}}} in {context}")
        self.add_template(name, body)
        return TemplateNode(token.pos, name, pipe)

    # pipelines

    def pipeline(self, context: str, end: str) -> PipeNode:
        start = self.peek_non_space().pos
        decl, is_assign = self.declarations(context)
        cmds: list[CommandNode] = []
        while True:
            token = self.next_non_space()
            if token.kind == end:
                return self.check_pipeline(PipeNode(start, decl, is_assign, tuple(cmds)), context, token)
            if token.kind in (
                "bool",
                "char_constant",
                "dot",
                "field",
                "identifier",
                "number",
                "nil",
                "raw_string",
                "string",
                "variable",
                "lparen",
            ):
                self.backup()
                cmds.append(self.command())
            else:
                raise self.unexpected(token, context)

    def declarations(self, context: str) -> tuple[tuple[VariableNode, ...], bool]:
        decl: list[VariableNode] = []
        while self.peek_non_space().kind == "variable":
            start = self.i
            variable = self.next()
            after = self.peek_non_space()
            if after.kind in ("assign", "declare"):
                self.next()
                decl.append(VariableNode(variable.pos, (variable.value,)))
                self.vars.append(variable.value)
                return tuple(decl), after.kind == "assign"
            if after.kind == "char" and after.value == ",":
                self.next()
                decl.append(VariableNode(variable.pos, (variable.value,)))
                self.vars.append(variable.value)
                if context == "range" and len(decl) < 2 and self.peek_non_space().kind in ("variable", "right"):
                    continue
                if context == "range" and len(decl) < 2:
                    raise self.fail(after.pos, "range can only initialize variables")
                raise self.fail(after.pos, f"too many declarations in {context}")
            self.i = start
            break
        if decl:
            raise self.fail(decl[-1].pos, f"missing := after {decl[-1]} in {context}")
        return (), False

    def check_pipeline(self, pipe: PipeNode, context: str, end_token: _Token) -> PipeNode:
        if not pipe.cmds:
            raise self.fail(end_token.pos, f"missing value for {context}")
        for stage, cmd in enumerate(pipe.cmds[1:], start=2):
            if isinstance(cmd.args[0], (BoolNode, DotNode, NilNode, NumberNode, StringNode)):
                raise self.fail(cmd.pos, f"non executable command in pipeline stage {stage}")
        return pipe

    def command(self) -> CommandNode:
        start = self.peek_non_space().pos
        args: list[Node] = []
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                args.append(operand)
            token = self.next()
            if token.kind == "space":
                continue
            if token.kind in ("right", "rparen"):
                self.backup()
            elif token.kind != "pipe":
                raise self.unexpected(token, "operand")
            break
        if not args:
            raise self.fail(start, "empty command")
        return CommandNode(start, tuple(args))

    def operand(self) -> Node | None:
        node = self.term()
        if node is None or self.peek().kind != "field":
            return node
        fields: list[str] = []
        while self.peek().kind == "field":
            fields.append(self.next().value[1:])
        if isinstance(node, FieldNode):
            return FieldNode(node.pos, node.idents + tuple(fields))
        if isinstance(node, VariableNode):
            return VariableNode(node.pos, node.idents + tuple(fields))
        if isinstance(node, (BoolNode, StringNode, NumberNode, NilNode, DotNode)):
            raise self.fail(node.pos, f"unexpected . after term {str(node)!r}")
        return ChainNode(node.pos, node, tuple(fields))

    def term(self) -> Node | None:
        token = self.next_non_space()
        kind, value, pos = token.kind, token.value, token.pos
        if kind == "identifier":
            if value not in self.functions:
                raise self.fail(pos, f'function "{value}" not defined')
            return IdentifierNode(pos, value)
        if kind == "dot":
            return DotNode(pos)
        if kind == "nil":
            return NilNode(pos)
        if kind == "variable":
            if value not in self.vars:
                raise self.fail(pos, f'undefined variable "{value}"')
            return VariableNode(pos, (value,))
        if kind == "field":
            return FieldNode(pos, (value[1:],))
        if kind == "bool":
            return BoolNode(pos, value == "true")
        if kind in ("number", "char_constant"):
            try:
                return NumberNode(pos, value, _parse_number(value, kind))
            except ValueError as exc:
                raise self.fail(pos, str(exc)) from None
        if kind == "lparen":
            self.nesting += 1
            if self.nesting > MAX_NESTING:
                raise self.fail(pos, f"parentheses nested deeper than {MAX_NESTING}")
            pipe = self.pipeline("parenthesized pipeline", "rparen")
            self.nesting -= 1
            return pipe
        if kind in ("string", "raw_string"):
            return StringNode(pos, value, self.unquote(token))
        self.backup()
        return None

    def unquote(self, token: _Token) -> str:
        try:
            return _unquote(token.value)
        except ValueError as exc:
            raise self.fail(token.pos, f"{exc} in {token.value}") from None


# -------------------------------------------------------------------------------------------- functions


@dataclass(frozen=True)
class TemplateFunc:
    """A function templates can call: its Python implementation and Go signature.

    ``params`` are the fixed parameters' types ("string" or None for any value); with ``variadic`` set,
    any number of further arguments of type ``variadic`` ("string" or None) follow.
    """

    call: Callable[..., Any]
    params: tuple[str | None, ...] = (None,)
    variadic: bool = False
    variadic_type: str | None = None

    def param_type(self, index: int) -> str | None:
        return self.params[index] if index < len(self.params) else self.variadic_type


def _indirect_len(item: Any) -> int:
    kind = _go_kind(item)
    if kind == "string":
        return len(item.encode("utf-8"))
    if kind in ("slice", "map"):
        return len(item)
    if kind == "invalid":
        raise TemplateFuncError("len of nil pointer")
    raise TemplateFuncError(f"len of type {_go_type_name(item)}")


def _index_arg(index: Any, cap: int) -> int:
    if index is None:
        raise TemplateFuncError("cannot index slice/array with nil")
    if _go_kind(index) != "int":
        raise TemplateFuncError(f"cannot index slice/array with type {_go_type_name(index)}")
    if index < 0 or index > cap:
        raise TemplateFuncError(f"index out of range: {index}")
    return index


def _index(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise TemplateFuncError("index of untyped nil")
    for index in indexes:
        kind = _go_kind(item)
        if kind in ("slice", "string"):
            sequence = item.encode("utf-8") if kind == "string" else item
            position = _index_arg(index, len(sequence))
            if position == len(sequence):
                raise TemplateFuncError(f"index out of range: {position}")
            item = sequence[position]
        elif kind == "map":
            if not isinstance(index, str):
                raise TemplateFuncError(f"value has type {_go_type_name(index)}; should be string")
            item = item.get(index)
        elif kind == "invalid":
            raise TemplateFuncError("index of nil pointer")
        else:
            raise TemplateFuncError(f"can't index item of type {_go_type_name(item)}")
    return item


def _slice(item: Any, *indexes: Any) -> Any:
    if item is None:
        raise TemplateFuncError("slice of untyped nil")
    if len(indexes) > 3:
        raise TemplateFuncError(f"too many slice indexes: {len(indexes)}")
    kind = _go_kind(item)
    if kind == "string" and len(indexes) == 3:
        raise TemplateFuncError("cannot 3-index slice a string")
    if kind not in ("string", "slice"):
        raise TemplateFuncError(f"can't slice item of type {_go_type_name(item)}")
    sequence = item.encode("utf-8") if kind == "string" else item
    bounds = [0, len(sequence)]
    for i, index in enumerate(indexes[:2]):
        bounds[i] = _index_arg(index, len(sequence))
    if len(indexes) == 3:
        _index_arg(indexes[2], len(sequence))
    if bounds[0] > bounds[1]:
        raise TemplateFuncError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    if kind == "string":
        return sequence[bounds[0] : bounds[1]].decode("utf-8", errors="replace")
    part = list(item[bounds[0] : bounds[1]])
    try:
        return type(item)(part)
    except TypeError:
        return part


_BASIC_KINDS = ("bool", "int", "float", "string")


def _eq(first: Any, *others: Any) -> bool:
    if not others:
        raise TemplateFuncError("missing argument for comparison")
    kind1 = _go_kind(first)
    for other in others:
        kind2 = _go_kind(other)
        if kind1 != kind2:
            if first is not None and other is not None:
                raise TemplateFuncError("incompatible types for comparison")
            continue
        if kind1 in _BASIC_KINDS or kind1 == "invalid":
            if first == other:
                return True
        elif kind1 in ("slice", "map"):
            raise TemplateFuncError(f"non-comparable type {_fmt_value(first)}: {_go_type_name(first)}")
        elif first == other:
            return True
    return False


def _ne(first: Any, second: Any) -> bool:
    return not _eq(first, second)


def _lt(first: Any, second: Any) -> bool:
    kind1, kind2 = _go_kind(first), _go_kind(second)
    if kind1 not in _BASIC_KINDS or kind2 not in _BASIC_KINDS:
        raise TemplateFuncError("invalid type for comparison")
    if kind1 != kind2:
        raise TemplateFuncError("incompatible types for comparison")
    if kind1 == "bool":
        raise TemplateFuncError("invalid type for comparison")
    return first < second


def _le(first: Any, second: Any) -> bool:
    return _lt(first, second) or _eq(first, second)


def _gt(first: Any, second: Any) -> bool:
    return not _le(first, second)


def _ge(first: Any, second: Any) -> bool:
    return not _lt(first, second)


def _escaper_text(args: Sequence[Any]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return _sprint(args)


def _call(fn: Any, *args: Any) -> Any:
    raise TemplateFuncError(f"non-function {_fmt_value(fn)} of type {_go_type_name(fn)}")


_LAZY_BUILTINS = frozenset({"and", "or"})  # arguments evaluated one at a time by the executor
_BUILTINS: Mapping[str, TemplateFunc] = {
    "not": TemplateFunc(lambda v: not is_true(v)),
    "len": TemplateFunc(_indirect_len),
    "index": TemplateFunc(_index, (None,), variadic=True),
    "slice": TemplateFunc(_slice, (None,), variadic=True),
    "eq": TemplateFunc(_eq, (None,), variadic=True),
    "ne": TemplateFunc(_ne, (None, None)),
    "lt": TemplateFunc(_lt, (None, None)),
    "le": TemplateFunc(_le, (None, None)),
    "gt": TemplateFunc(_gt, (None, None)),
    "ge": TemplateFunc(_ge, (None, None)),
    "print": TemplateFunc(lambda *a: _sprint(a), (), variadic=True),
    "println": TemplateFunc(lambda *a: " ".join(_fmt_value(x) for x in a) + "\n", (), variadic=True),
    "html": TemplateFunc(lambda *a: _html_escape(_escaper_text(a)), (), variadic=True),
    "js": TemplateFunc(lambda *a: _js_escape(_escaper_text(a)), (), variadic=True),
    "urlquery": TemplateFunc(lambda *a: _url_query_escape(_escaper_text(a)), (), variadic=True),
    "call": TemplateFunc(_call, (None,), variadic=True),
}


# ---------------------------------------------------------------------------------------------- executor


@dataclass(frozen=True)
class Limits:
    """Hard limits on one execution, so a hostile template cannot hang or exhaust memory."""

    max_output_chars: int = 8_000_000
    max_steps: int = 2_000_000  # nodes walked plus range iterations
    max_depth: int = 64  # nested {{template}} calls


DEFAULT_LIMITS = Limits()

_MISSING = object()  # no final value from a previous pipeline stage


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


@dataclass(frozen=True)
class Template:
    """A parsed Go template: the root tree and the templates it {{define}}s or {{block}}s."""

    source: str
    root: ListNode
    defined: Mapping[str, ListNode]

    def execute(
        self, data: Any, funcs: Mapping[str, TemplateFunc] | None = None, limits: Limits = DEFAULT_LIMITS
    ) -> str:
        """Run the template with `data` as dot and `$`; functions are the builtins plus `funcs`."""
        return _Executor(self, dict(funcs or {}), limits).run(data)

    def with_root(self, root: ListNode) -> Template:
        return dataclasses.replace(self, root=root)


MAX_SOURCE_CHARS = 1_000_000  # real Ollama templates are a few KiB; parsing is linear but its nodes are not small
MAX_TOKENS = 100_000  # actions and text runs of one template


def parse(source: str, func_names: Collection[str] = ()) -> Template:
    """Parse Go template text; `func_names` are the non-builtin functions it may call."""
    if len(source) > MAX_SOURCE_CHARS:
        raise TemplateLimitError(f"the template is {len(source):,} characters long, over the {MAX_SOURCE_CHARS:,} "
                                 "mldebug parses")
    if source.count("{{") > MAX_TOKENS:
        raise TemplateLimitError(f"the template has {source.count('{{'):,} actions, over the {MAX_TOKENS:,} "
                                 "mldebug parses")
    tokens = _Lexer(source).run()
    known = set(_BUILTINS) | _LAZY_BUILTINS | {"printf"} | set(func_names)
    root, defined = _Parser(source, tokens, known).parse()
    return Template(source, root, dict(defined))


class _Executor:
    def __init__(self, template: Template, funcs: dict[str, TemplateFunc], limits: Limits) -> None:
        self.template = template
        # Functions given to the template win over builtins of the same name, as in Go.
        printf = TemplateFunc(lambda fmt, *args: _sprintf(fmt, args, limits.max_output_chars), ("string",), True)
        self.funcs = {**_BUILTINS, "printf": printf, **funcs}
        self.limits = limits
        self.out: list[str] = []
        self.out_chars = 0
        self.steps = 0
        self.depth = 0
        self.vars: list[list[Any]] = []  # [name, value] pairs; innermost last

    def run(self, data: Any) -> str:
        self.vars = [["$", data]]
        try:
            self.walk(data, self.template.root)
        except RecursionError:
            raise TemplateLimitError("template execution nested too deeply") from None
        return "".join(self.out)

    # errors and limits

    def fail(self, node: Any, message: str) -> TemplateExecError:
        line, col = _line_col(self.template.source, getattr(node, "pos", 0))
        shown = (
            f" at <{node}>"
            if isinstance(node, (FieldNode, VariableNode, IdentifierNode, ChainNode, CommandNode, PipeNode))
            else ""
        )
        return TemplateExecError(f"template line {line}:{col}: executing{shown}: {message}")

    def limit(self, node: Any, message: str) -> TemplateLimitError:
        line, col = _line_col(self.template.source, node.pos)
        return TemplateLimitError(f"template line {line}:{col}: {message}")

    def tick(self, node: Any) -> None:
        self.steps += 1
        if self.steps > self.limits.max_steps:
            raise self.limit(node, f"execution exceeded {self.limits.max_steps:,} steps")

    def emit(self, text: str) -> None:
        self.out_chars += len(text)
        if self.out_chars > self.limits.max_output_chars:
            raise TemplateLimitError(f"template output exceeded {self.limits.max_output_chars:,} characters")
        self.out.append(text)

    # variables

    def push(self, name: str, value: Any) -> None:
        self.vars.append([name, value])

    def set_var(self, node: VariableNode, value: Any) -> None:
        for entry in reversed(self.vars):
            if entry[0] == node.idents[0]:
                entry[1] = value
                return
        raise self.fail(node, f"undefined variable: {node.idents[0]}")

    def var_value(self, node: VariableNode) -> Any:
        for name, value in reversed(self.vars):
            if name == node.idents[0]:
                return value
        raise self.fail(node, f"undefined variable: {node.idents[0]}")

    # walking

    def walk(self, dot: Any, node: Node) -> None:
        self.tick(node)
        if isinstance(node, ListNode):
            for child in node.nodes:
                self.walk(dot, child)
        elif isinstance(node, TextNode):
            self.emit(node.text)
        elif isinstance(node, ActionNode):
            value = self.eval_pipeline(dot, node.pipe)
            if not node.pipe.decl:
                self.emit("<no value>" if value is None else _fmt_value(value))
        elif isinstance(node, (IfNode, WithNode)):
            self.walk_if_or_with(dot, node)
        elif isinstance(node, RangeNode):
            self.walk_range(dot, node)
        elif isinstance(node, TemplateNode):
            self.walk_template(dot, node)
        elif isinstance(node, BreakNode):
            raise _Break
        elif isinstance(node, ContinueNode):
            raise _Continue
        else:
            raise self.fail(node, f"unknown node {type(node).__name__}")

    def walk_if_or_with(self, dot: Any, node: IfNode | WithNode) -> None:
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            if is_true(value):
                self.walk(value if isinstance(node, WithNode) else dot, node.list)
            elif node.else_list is not None:
                self.walk(dot, node.else_list)
        finally:
            del self.vars[mark:]

    def walk_range(self, dot: Any, node: RangeNode) -> None:
        mark = len(self.vars)
        try:
            value = self.eval_pipeline(dot, node.pipe)
            body_mark = len(self.vars)
            ran = False
            for index, element in self.range_items(node, value):
                ran = True
                self.tick(node)
                self.set_range_vars(node.pipe, body_mark, index, element)
                try:
                    self.walk(element, node.list)
                except _Continue:
                    pass
                except _Break:
                    break
                finally:
                    del self.vars[body_mark:]
            if not ran and node.else_list is not None:
                self.walk(dot, node.else_list)
        finally:
            del self.vars[mark:]

    def range_items(self, node: RangeNode, value: Any) -> Any:
        kind = _go_kind(value)
        if kind == "invalid":
            return ()
        if kind == "slice":
            return enumerate(value)
        if kind == "map":
            return ((key, value[key]) for key in _sorted_keys(value))
        if kind == "int":
            if len(node.pipe.decl) > 1:
                raise self.fail(node.pipe, f"can't use {value} to iterate over more than one variable")
            return ((None, i) for i in range(value))
        raise self.fail(node.pipe, f"range can't iterate over {_fmt_value(value)}")

    def set_range_vars(self, pipe: PipeNode, body_mark: int, index: Any, element: Any) -> None:
        if not pipe.decl:
            return
        if pipe.is_assign:
            if len(pipe.decl) > 1:
                self.set_var(pipe.decl[0], index)
                self.set_var(pipe.decl[1], element)
            else:
                self.set_var(pipe.decl[0], element)
            return
        self.vars[body_mark - 1][1] = element  # the last declared variable gets the element
        if len(pipe.decl) > 1:
            self.vars[body_mark - 2][1] = index

    def walk_template(self, dot: Any, node: TemplateNode) -> None:
        body = self.template.defined.get(node.name)
        if body is None and node.name == "":
            body = self.template.root
        if body is None:
            raise self.fail(node, f'template "{node.name}" not defined')
        if self.depth >= self.limits.max_depth:
            raise self.limit(node, f"exceeded maximum template depth ({self.limits.max_depth})")
        new_dot = self.eval_pipeline(dot, node.pipe) if node.pipe is not None else None
        saved_vars, self.vars = self.vars, [["$", new_dot]]
        self.depth += 1
        try:
            self.walk(new_dot, body)
        finally:
            self.depth -= 1
            self.vars = saved_vars

    # evaluation

    def eval_pipeline(self, dot: Any, pipe: PipeNode) -> Any:
        value: Any = _MISSING
        for cmd in pipe.cmds:
            value = self.eval_command(dot, cmd, value)
        for variable in pipe.decl:
            if pipe.is_assign:
                self.set_var(variable, value)
            else:
                self.push(variable.idents[0], value)
        return value

    def eval_command(self, dot: Any, cmd: CommandNode, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, FieldNode):
            return self.eval_field_chain(dot, dot, first, first.idents, cmd.args, final)
        if isinstance(first, ChainNode):
            return self.eval_chain(dot, first, cmd.args, final)
        if isinstance(first, IdentifierNode):
            return self.eval_function(dot, first, cmd.args, final)
        if isinstance(first, VariableNode):
            return self.eval_variable(dot, first, cmd.args, final)
        self.not_a_function(cmd.args, final)
        if isinstance(first, PipeNode):
            return self.eval_pipeline(dot, first)
        if isinstance(first, DotNode):
            return dot
        if isinstance(first, NilNode):
            raise self.fail(cmd, "nil is not a command")
        if isinstance(first, (BoolNode, NumberNode)):
            return first.value
        if isinstance(first, StringNode):
            return first.text
        raise self.fail(cmd, f"can't evaluate command {first}")

    def not_a_function(self, args: Sequence[Node], final: Any) -> None:
        if len(args) > 1 or final is not _MISSING:
            raise self.fail(args[0], f"can't give argument to non-function {args[0]}")

    def eval_variable(self, dot: Any, node: VariableNode, args: Sequence[Node] | None, final: Any) -> Any:
        value = self.var_value(node)
        if len(node.idents) == 1:
            self.not_a_function(args or (node,), final)
            return value
        return self.eval_field_chain(dot, value, node, node.idents[1:], args, final)

    def eval_chain(self, dot: Any, chain: ChainNode, args: Sequence[Node] | None, final: Any) -> Any:
        if isinstance(chain.node, NilNode):
            raise self.fail(chain, f"indirection through explicit nil in {chain}")
        receiver = self.eval_arg(dot, chain.node)
        return self.eval_field_chain(dot, receiver, chain, chain.fields, args, final)

    def eval_field_chain(
        self, dot: Any, receiver: Any, node: Any, idents: Sequence[str], args: Sequence[Node] | None, final: Any
    ) -> Any:
        for i, name in enumerate(idents):
            last = i == len(idents) - 1
            if receiver is None:
                if i > 0:  # a nil interface produced earlier in the chain, as Go reports it
                    raise self.fail(node, f"nil pointer evaluating interface {{}}.{name}")
                return None  # an invalid receiver (nil dot or variable) yields the zero value
            receiver = self.eval_field(dot, node, name, args if last else None, final if last else _MISSING, receiver)
        return receiver

    def eval_field(self, dot: Any, node: Any, name: str, args: Sequence[Node] | None, final: Any, receiver: Any) -> Any:
        has_args = (args is not None and len(args) > 1) or final is not _MISSING
        method = getattr(receiver, "go_methods", {}).get(name)
        if method is not None:
            values = [self.eval_arg(dot, a) for a in (args or ())[1:]]
            if final is not _MISSING:
                values.append(final)
            try:
                return method(receiver, *values)
            except TypeError:
                raise self.fail(node, f"wrong number of args for {name}: got {len(values)}") from None
        if isinstance(receiver, GoStruct):
            fields = dict(receiver.go_fields())
            if name in fields:
                if has_args:
                    raise self.fail(node, f"{name} has arguments but cannot be invoked as function")
                return fields[name]
        elif isinstance(receiver, dict):
            if has_args:
                raise self.fail(node, f"{name} is not a method but has arguments")
            return receiver.get(name)
        raise self.fail(node, f"can't evaluate field {name} in type {_go_type_name(receiver)}")

    def eval_function(self, dot: Any, node: IdentifierNode, args: Sequence[Node], final: Any) -> Any:
        name = node.name
        arg_nodes = list(args[1:])
        if name in _LAZY_BUILTINS and name not in self.funcs:
            return self.eval_and_or(dot, node, name, arg_nodes, final)
        fn = self.funcs.get(name)
        if fn is None:
            raise self.fail(node, f'"{name}" is not a defined function')
        count = len(arg_nodes) + (final is not _MISSING)
        self.check_arg_count(node, name, fn, count)
        values = [self.eval_typed_arg(dot, fn.param_type(i), a) for i, a in enumerate(arg_nodes)]
        if final is not _MISSING:
            values.append(self.check_type(node, fn.param_type(len(values)), final))
        try:
            result = fn.call(*values)
        except TemplateFuncError as exc:
            raise self.fail(node, f"error calling {name}: {exc}") from None
        except TemplateLimitError as exc:
            raise self.limit(node, str(exc)) from None
        if isinstance(result, str) and len(result) > self.limits.max_output_chars:
            raise self.limit(node, f"{name} built a string longer than {self.limits.max_output_chars:,} characters")
        return result

    def check_arg_count(self, node: IdentifierNode, name: str, fn: TemplateFunc, count: int) -> None:
        fixed = len(fn.params)
        if fn.variadic and count < fixed:
            raise self.fail(node, f"wrong number of args for {name}: want at least {fixed} got {count}")
        if not fn.variadic and count != fixed:
            raise self.fail(node, f"wrong number of args for {name}: want {fixed} got {count}")

    def eval_and_or(self, dot: Any, node: IdentifierNode, name: str, arg_nodes: list[Node], final: Any) -> Any:
        if not arg_nodes and final is _MISSING:
            raise self.fail(node, f"wrong number of args for {name}: want at least 1 got 0")
        value: Any = None
        for arg in arg_nodes:
            value = self.eval_arg(dot, arg)
            if is_true(value) == (name == "or"):
                return value
        return final if final is not _MISSING else value

    def eval_typed_arg(self, dot: Any, param_type: str | None, node: Node) -> Any:
        if param_type == "string" and isinstance(node, NilNode):
            raise self.fail(node, "cannot assign nil to string")
        return self.check_type(node, param_type, self.eval_arg(dot, node))

    def check_type(self, node: Any, param_type: str | None, value: Any) -> Any:
        if param_type == "string" and not isinstance(value, str):
            if value is None:
                raise self.fail(node, "invalid value; expected string")
            raise self.fail(node, f"wrong type for value; expected string; got {_go_type_name(value)}")
        return value

    def eval_arg(self, dot: Any, node: Node) -> Any:
        if isinstance(node, DotNode):
            return dot
        if isinstance(node, NilNode):
            return None
        if isinstance(node, FieldNode):
            return self.eval_field_chain(dot, dot, node, node.idents, (node,), _MISSING)
        if isinstance(node, VariableNode):
            return self.eval_variable(dot, node, None, _MISSING)
        if isinstance(node, PipeNode):
            return self.eval_pipeline(dot, node)
        if isinstance(node, IdentifierNode):
            return self.eval_function(dot, node, (node,), _MISSING)
        if isinstance(node, ChainNode):
            return self.eval_chain(dot, node, None, _MISSING)
        if isinstance(node, (BoolNode, NumberNode)):
            return node.value
        if isinstance(node, StringNode):
            return node.text
        raise self.fail(node, f"can't handle {node} for arg")


def identifiers(template: Template) -> list[str]:
    """Every field and variable identifier in the trees, in order (Ollama's template.Identifiers walk)."""
    names: list[str] = []
    for root in (template.root, *template.defined.values()):
        _collect_identifiers(root, names)
    return names


def _collect_identifiers(node: Any, names: list[str]) -> None:
    if isinstance(node, ListNode):
        for child in node.nodes:
            _collect_identifiers(child, names)
    elif isinstance(node, (ActionNode, TemplateNode)):
        if node.pipe is not None:
            _collect_identifiers(node.pipe, names)
    elif isinstance(node, (IfNode, RangeNode, WithNode)):
        _collect_identifiers(node.pipe, names)
        _collect_identifiers(node.list, names)
        if node.else_list is not None:
            _collect_identifiers(node.else_list, names)
    elif isinstance(node, PipeNode):
        for cmd in node.cmds:
            for arg in cmd.args:
                _collect_identifiers(arg, names)
    elif isinstance(node, (FieldNode, VariableNode)):
        names.extend(node.idents)
