"""The lexer (text/template/parse/lex.go) and Go literal syntax (strconv's Unquote and number parsing)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mldebug_cli.render.gotemplate.errors import TemplateSyntaxError, _line_col

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
    number = float.fromhex(digits.replace("_", "")) if is_hex else float(digits.replace("_", ""))
    return -number if negative else number


def _parse_int(digits: str, text: str) -> int:
    octal = re.fullmatch(r"0[0-7_]+", digits)  # Go's base 0 reads a leading zero as octal
    try:
        value = int(digits.replace("_", ""), 8) if octal else int(digits, 0)
    except ValueError:
        raise ValueError(f"illegal number syntax: {text!r}") from None
    if value >= 2**63:
        raise ValueError(f"{text} overflows int")
    return value
