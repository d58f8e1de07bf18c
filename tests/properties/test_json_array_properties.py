"""The streamed JSON array reader gives what json.loads gives, wherever the chunk boundaries fall."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources import json_array
from mldebug_cli.sources.json_array import json_array_elements

# escapes, quotes, brackets and non-ASCII inside strings are what a boundary can cut badly
text = st.text(alphabet=st.sampled_from(list('ab"\\[]{},: \n\té€😀')), max_size=12)
values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(values, min_size=1, max_size=6), indent=st.sampled_from([None, 1, 2]), chunk=st.integers(1, 9))
def test_streamed_elements_equal_json_loads(rows, indent, chunk):
    text_ = json.dumps(rows, indent=indent, ensure_ascii=False)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_array, "CHUNK_CHARS", chunk)
        path = Path(tmp) / "rows.json"
        path.write_text(text_, encoding="utf-8")
        elements = list(json_array_elements(path, max_chars=10**6))
    assert [e.value for e in elements] == rows
    assert [json.loads(e.text) for e in elements] == rows
    # each element's line is the line its text starts on
    starts, pos = [], text_.index("[") + 1
    decoder = json.JSONDecoder()
    for _ in rows:
        while text_[pos] in " \t\r\n,":
            pos += 1
        starts.append(1 + text_.count("\n", 0, pos))
        pos = decoder.raw_decode(text_, pos)[1]
    assert [e.line for e in elements] == starts


@pytest.mark.parametrize("chunk", [1, 3, 64, 2**20])
def test_elements_over_the_limit_are_skipped_with_their_size(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(json_array, "CHUNK_CHARS", chunk)
    long_row = {"text": 'x\\"]}' * 40, "nested": [[{"a": "[{"}]]}
    long_text = json.dumps(long_row)
    path = tmp_path / "rows.json"
    path.write_text('[\n{"a": 1},\n' + long_text + ',\n"' + "y" * 300 + '",\n{"b": 2}\n]\n')
    elements = list(json_array_elements(path, max_chars=100))
    assert [(e.index, e.line, e.size) for e in elements if e.text is None] == [(1, 3, len(long_text)), (2, 4, 302)]
    assert [e.value for e in elements if e.text is not None] == [{"a": 1}, {"b": 2}]
    assert elements[-1].line == 5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[\n{"a": 1},\n{"a": 2,,}\n]', ":3:9: row 1: invalid JSON: Expecting property name enclosed in double quotes"),
        ('[\n{"a": 1}\n{"a": 2}\n]', ":3: expected ',' or ']' between rows, found '{'"),
        ('[\n{"a": 1},\n{"a": ', ":3:7: row 1: invalid JSON: Expecting value"),
        ('[\n{"a": 1},\n', ":3: the JSON array is not closed (file truncated?)"),
        ("[\n]", ": the JSON array is empty"),
        ('[{"a": "\xff"}]', ": not valid UTF-8 (byte 8)"),
    ],
)
def test_broken_arrays_are_one_line_errors_with_the_place(tmp_path, monkeypatch, content, message):
    monkeypatch.setattr(json_array, "CHUNK_CHARS", 4)
    path = tmp_path / "rows.json"
    path.write_bytes(content.encode("latin-1") if "\xff" in content else content.encode())
    with pytest.raises(InputError) as info:
        list(json_array_elements(path, max_chars=10**6))
    assert str(info.value) == f"{path}{message}"
