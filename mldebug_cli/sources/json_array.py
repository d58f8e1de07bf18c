"""The elements of a file's top-level JSON array, streamed: memory stays flat however long the array is.

LLaMA-Factory and many exported datasets are one JSON array of rows. The file is decoded in 1 MiB chunks and
each element is cut out with the C decoder (``raw_decode``); only the current chunk and element are held. An
element longer than the row limit is skipped with a scan that keeps nothing but its size and becomes a record
error; broken JSON stops the read with the file, line and column, since nothing after it can be trusted.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import open_regular

CHUNK_CHARS = 2**20
NESTED_TOO_DEEPLY = "JSON nested too deeply"


def number_too_long() -> str:
    """A row's JSON holds an integer longer than Python converts (``sys.get_int_max_str_digits``)."""
    return f"a number has more than {sys.get_int_max_str_digits():,} digits, more than mldebug reads"
_SPACE = re.compile(r"[ \t\r\n]*")
_STRUCTURE = re.compile(r'[\[\]{}"]')  # outside strings: what changes the nesting
_STRING_END = re.compile(r'["\\]')  # inside a string: its end, or an escape
_SCALAR_END = re.compile(r"[,\]\s]")


@dataclass(frozen=True)
class Element:
    index: int
    line: int  # 1-based line the element starts on
    text: str | None  # its JSON text; None when it was too long to keep
    value: Any = None  # the decoded element (when text is not None)
    size: int = 0  # characters
    error: str | None = None  # why the element cannot be a row (nested too deeply, a number too long)


class _Buffer:
    """Decoded text of the file from ``pos`` on, read a chunk at a time, with the line number at ``pos``."""

    def __init__(self, fh, path: Path) -> None:
        self.fh, self.path = fh, path
        self.decoder = codecs.getincrementaldecoder("utf-8-sig")()
        self.text, self.pos, self.line, self.eof, self.bytes_read = "", 0, 1, False, 0

    def more(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        raw = self.fh.read(CHUNK_CHARS)
        try:
            decoded = self.decoder.decode(raw, final=not raw)
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.path}: not valid UTF-8 (byte {self.bytes_read + exc.start})") from None
        self.bytes_read += len(raw)
        self.eof = not raw
        self.text = self.text[self.pos :] + decoded
        self.pos = 0
        return bool(raw)

    def advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def peek(self) -> str:
        """The next character after white space, or '' at the end of the file."""
        while True:
            spaces = _SPACE.match(self.text, self.pos)  # matches (maybe nothing) at any position
            self.advance(spaces.end() if spaces else self.pos)
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""


def json_array_elements(path: Path, max_chars: int) -> Iterator[Element]:
    """Every element of the top-level array in ``path``, in order; those over ``max_chars`` without their text."""
    with open_regular(path) as fh:
        buf = _Buffer(fh, path)
        if buf.peek() != "[":
            raise InputError(f"{path}:{buf.line}: expected a JSON array")
        buf.advance(buf.pos + 1)
        index = 0
        while True:
            char = buf.peek()
            if char == "]":
                buf.advance(buf.pos + 1)
                after = buf.peek()
                if after:  # json.load and datasets refuse the file ("Extra data"): never read as the array alone
                    _fail(path, buf.line, f"text after the JSON array's closing ']' (found {after!r}); "
                                          "a JSON file holds one value")
                break
            if index:
                if char != ",":
                    _fail(path, buf.line, "expected ',' or ']' between rows" + (f", found {char!r}" if char else ""))
                buf.advance(buf.pos + 1)
                char = buf.peek()
            if not char:
                _fail(path, buf.line, "the JSON array is not closed (file truncated?)")
            yield _element(buf, index, max_chars)
            index += 1
    if not index:
        raise InputError(f"{path}: the JSON array is empty")


def _fail(path: Path, line: int, message: str) -> None:
    raise InputError(f"{path}:{line}: {message}")


def _element(buf: _Buffer, index: int, max_chars: int) -> Element:
    """Decode the element at ``buf.pos``, reading on while the end of the chunk cuts it off."""
    decoder = json.JSONDecoder()
    extent, scanned = None, 0  # its string/bracket scan, kept across chunks: how far it got from the element's start
    while True:
        try:
            value, end = decoder.raw_decode(buf.text, buf.pos)
        except RecursionError:
            return _skip_long(buf, index, _Extent(buf.text[buf.pos]), 0, NESTED_TOO_DEEPLY)
        except json.JSONDecodeError as exc:  # cut off by the chunk's end, or broken: the scan tells which
            extent = extent or _Extent(buf.text[buf.pos])
            found, resume = extent.end_in(buf.text, buf.pos + scanned)
            scanned = resume - buf.pos
            if found is None and scanned > max_chars:
                return _skip_long(buf, index, extent, scanned)
            if found is None and buf.more():
                continue
            line = buf.line + buf.text.count("\n", buf.pos, exc.pos)
            column = exc.pos - buf.text.rfind("\n", 0, exc.pos)
            raise InputError(f"{buf.path}:{line}:{column}: row {index}: invalid JSON: {exc.msg}") from None
        except ValueError:  # an integer over Python's digit limit
            return _skip_long(buf, index, _Extent(buf.text[buf.pos]), 0, number_too_long())
        number_may_go_on = isinstance(value, (int, float)) and not _SCALAR_END.search(buf.text, end)
        if number_may_go_on and buf.more():  # "1" of "1.5": the rest is in the next chunk
            continue
        size = end - buf.pos
        element = Element(index, buf.line, buf.text[buf.pos : end] if size <= max_chars else None,
                          value if size <= max_chars else None, size)
        buf.advance(end)
        return element


def _skip_long(buf: _Buffer, index: int, extent: _Extent, scanned: int, error: str | None = None) -> Element:
    """Skip an element too long (or, with ``error``, unfit) to inspect, keeping only its size (``extent`` has
    scanned ``scanned`` characters)."""
    line, size, resume = buf.line, 0, buf.pos + scanned
    while True:
        end, resume = extent.end_in(buf.text, resume)
        stop = end if end is not None else resume
        size += stop - buf.pos
        buf.advance(stop)
        if end is not None:
            return Element(index, line, None, size=size, error=error)
        if not buf.more():
            raise InputError(f"{buf.path}:{line}: row {index}: the JSON array is not closed (file truncated?)")
        resume = buf.pos


class _Extent:
    """Where a JSON value ends, found by following its strings and brackets without decoding it (across chunks)."""

    def __init__(self, first: str) -> None:
        self.scalar = first not in '[{"'
        self.depth = 0
        self.in_string = False

    def end_in(self, text: str, i: int) -> tuple[int | None, int]:
        """(the value's end, or None when it goes on past ``text``; where to resume with more text)."""
        while True:
            pattern = _SCALAR_END if self.scalar else _STRING_END if self.in_string else _STRUCTURE
            found = pattern.search(text, i)
            if found is None:
                return None, len(text)
            if self.scalar:
                return found.start(), found.start()
            token, i = found.group(), found.end()
            if token == "\\":
                if i >= len(text):  # the escaped character is in the next chunk: look at the backslash again then
                    return None, found.start()
                i += 1
                continue
            if token == '"':
                self.in_string = not self.in_string
                if self.in_string:
                    continue
            elif token in "[{":
                self.depth += 1
                continue
            else:
                self.depth -= 1
            if self.depth == 0:
                return i, i
