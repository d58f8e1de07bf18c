"""GGUF metadata reading on llama.cpp's own vocab files, tiny files written with gguf.GGUFWriter, and broken files.

gguf.GGUFReader is the reference: on every real GGUF at hand the walker's vocab equals the one built from it.
"""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.engines.registry import render_source_side
from mldebug_cli.sources.gguf_file import _vocab_from_reader, read_gguf_vocab
from support import CORPUS_GGUF, needs_corpus

ROOT = Path(__file__).resolve().parents[2]
PHI3 = CORPUS_GGUF / "ggml-vocab-phi-3.gguf"
FIXTURE_GGUFS = [p for p in sorted((ROOT / "fixtures").rglob("*.gguf")) if "hostile" not in p.parts]
CORPUS_GGUFS = sorted(CORPUS_GGUF.glob("*.gguf")) or [
    pytest.param(CORPUS_GGUF, marks=pytest.mark.skip(reason=f"{CORPUS_GGUF} is absent (as in CI)"))
]


def write_gguf(
    path: Path,
    *,
    template: object = None,
    add_bos: bool | None = None,
    bos_id: int = 1,
    tokens: tuple[str, ...] = ("<unk>", "<s>", "</s>", "<|im_end|>", "hi"),
    arch: str = "llama",
    eos_ids: list[int] | None = None,
    merges: list[str] | None = None,
) -> Path:
    writer = gguf.GGUFWriter(str(path), arch=arch)
    writer.add_name("tiny")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(list(tokens))
    writer.add_token_types([gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.NORMAL] * (len(tokens) - 4))
    writer.add_bos_token_id(bos_id)
    writer.add_eos_token_id(2)
    writer.add_eot_token_id(3)
    if add_bos is not None:
        writer.add_add_bos_token(add_bos)
    if merges is not None:
        writer.add_token_merges(merges)
    if template is not None:
        writer.add_chat_template(template)
    if eos_ids is not None:
        writer.add_array("tokenizer.ggml.eos_token_ids", eos_ids)
    return finish(writer, path)


def finish(writer: gguf.GGUFWriter, path: Path) -> Path:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def assert_same_as_gguf_reader(path: Path) -> None:
    walked = read_gguf_vocab(path)
    reference = _vocab_from_reader(path, gguf.GGUFReader(path, "r"))
    for name in (f.name for f in dataclasses.fields(walked)):
        assert getattr(walked, name) == getattr(reference, name), f"{path.name}: {name} differs from GGUFReader's"


def assert_same_outcome_as_gguf_reader(path: Path) -> None:
    """The same GGUFVocab, or the same InputError, from the walker and from GGUFReader."""
    outcomes = []
    for read in (read_gguf_vocab, lambda p: _vocab_from_reader(p, gguf.GGUFReader(p, "r"))):
        try:
            outcomes.append(read(path))
        except InputError as exc:
            outcomes.append(exc.message)
    assert outcomes[0] == outcomes[1]


@pytest.mark.replay  # mldebug's reader against gguf's own, one vocabulary per case
@pytest.mark.parametrize("path", FIXTURE_GGUFS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_vocab_equals_gguf_readers(path: Path) -> None:
    assert_same_as_gguf_reader(path)


@needs_corpus
@pytest.mark.replay(keep=1)  # gguf's GGUFReader reads a full vocabulary in Python: one in the fast tier
@pytest.mark.parametrize("path", CORPUS_GGUFS, ids=lambda p: p.name)
def test_corpus_vocab_equals_gguf_readers(path: Path) -> None:
    assert_same_as_gguf_reader(path)


def test_every_value_type_decodes_as_gguf_reader_does(tmp_path: Path) -> None:
    """Integers of several widths, UTF-8 tokens, skipped merges and scores, an alignment and a tensor."""
    writer = gguf.GGUFWriter(str(tmp_path / "all.gguf"), arch="qwen3")
    writer.add_custom_alignment(64)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(["a", "b", "é", "<|im_end|>", ""])
    writer.add_token_merges(["a b", "ab é"])
    writer.add_token_scores([0.5, -1.0, 2.0, 0.0, 1e30])
    writer.add_key_value(
        "tokenizer.ggml.token_type", [1, 1, 1, 3, 5], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.UINT8
    )
    writer.add_key_value("tokenizer.ggml.bos_token_id", 1, gguf.GGUFValueType.UINT64)
    writer.add_key_value("tokenizer.ggml.eos_token_id", 3, gguf.GGUFValueType.INT16)
    writer.add_key_value("tokenizer.ggml.padding_token_id", -1, gguf.GGUFValueType.INT64)
    writer.add_array("tokenizer.ggml.eos_token_ids", [3, 2, 99])
    writer.add_add_eos_token(True)
    writer.add_chat_template([{"name": "default", "template": "{{ x }}"}, {"name": "rag", "template": "é"}])
    writer.add_float64("general.score", 0.25)
    writer.add_tensor("w", np.zeros((2, 64), dtype=np.float32))
    path = finish(writer, tmp_path / "all.gguf")
    assert_same_as_gguf_reader(path)
    vocab = read_gguf_vocab(path)
    assert vocab.tokens == ("a", "b", "é", "<|im_end|>", "")
    assert vocab.token_types == (1, 1, 1, 3, 5)
    assert (vocab.bos_id, vocab.eos_id, vocab.pad_id, vocab.eos_token_ids) == (1, 3, None, (3, 2, 99))
    assert (vocab.add_bos_token, vocab.add_eos_token, vocab.tensor_count) == (None, True, 1)
    assert vocab.named_chat_templates == {"rag": "é"}


@pytest.mark.parametrize(
    ("key", "value", "kind", "item"),
    [
        ("tokenizer.ggml.tokens", [1, 2], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32),
        ("tokenizer.ggml.token_type", ["a"], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING),
        ("tokenizer.ggml.eos_token_ids", [True], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.BOOL),
        ("tokenizer.ggml.add_bos_token", 1, gguf.GGUFValueType.UINT8, None),
        ("tokenizer.ggml.eos_token_id", 2.0, gguf.GGUFValueType.FLOAT32, None),
        ("tokenizer.chat_template", ["x"], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING),
        ("tokenizer.chat_template.tool_use", 7, gguf.GGUFValueType.UINT32, None),
        ("general.name", True, gguf.GGUFValueType.BOOL, None),
    ],
)
def test_odd_value_types_are_judged_as_with_gguf_reader(tmp_path: Path, key, value, kind, item) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "odd.gguf"), arch="llama")
    writer.add_key_value(key, value, kind, sub_type=item)
    assert_same_outcome_as_gguf_reader(finish(writer, tmp_path / "odd.gguf"))


def test_an_empty_int_array_of_tokens_reads_as_with_gguf_reader(tmp_path: Path) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "one.gguf"), arch="llama")
    writer.add_key_value("tokenizer.ggml.tokens", [7], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32)
    data = finish(writer, tmp_path / "one.gguf").read_bytes()
    count_at = data.index(b"tokenizer.ggml.tokens") + len("tokenizer.ggml.tokens") + 4 + 4  # value type, item type
    path = tmp_path / "empty.gguf"
    path.write_bytes(data[:count_at] + struct.pack("<Q", 0) + data[count_at + 8 + 4 :])  # GGUFWriter refuses []
    assert_same_outcome_as_gguf_reader(path)
    assert read_gguf_vocab(path).tokens == ()


def test_ollama_engine_stops_on_eos_token_ids(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "q.gguf", arch="qwen3", eos_ids=[3, 2])
    assert read_gguf_vocab(path).eos_token_ids == (3, 2)
    side = render_source_side(tokenizer=None, template=None, gguf=str(path), modelfile=None, engine="ollama")
    assert side.stop_token_texts == ("</s>", "<|im_end|>")  # qwen3 runs on Ollama's engine: EOS plus eos_token_ids


@needs_corpus
def test_phi3_vocab_matches_llama_cpp_metadata() -> None:
    vocab = read_gguf_vocab(PHI3)
    assert (vocab.name, vocab.architecture, vocab.tokenizer_model) == ("Phi3", "phi3", "llama")
    assert len(vocab.tokens) == len(vocab.token_types) == 32064
    assert (vocab.bos_id, vocab.eos_id, vocab.pad_id, vocab.unk_id, vocab.eot_id) == (1, 32000, 32000, 0, None)
    assert (vocab.bos_text, vocab.eos_text) == ("<s>", "<|endoftext|>")
    assert vocab.add_bos and not vocab.add_eos
    assert vocab.chat_template.startswith("{{ bos_token }}{% for message in messages %}")
    assert vocab.named_chat_templates == {}
    assert vocab.token_text(32007) == "<|end|>"
    # <|end|> closes every Phi-3 turn: llama.cpp stops on it by its text although no metadata names it.
    assert vocab.end_of_turn_ids == (32000,)
    assert 32007 in vocab.end_of_generation_ids
    assert vocab.special_tokens[32000] == "<|endoftext|>"


@needs_corpus
@pytest.mark.parametrize("name", ["llama-spm", "phi-3", "gpt-2", "mpt"])
def test_every_corpus_vocab_reads(name: str) -> None:
    path = CORPUS_GGUF / f"ggml-vocab-{name}.gguf"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    vocab = read_gguf_vocab(path)
    assert vocab.name == name if name != "phi-3" else vocab.name == "Phi3"
    assert vocab.tokens and vocab.bos_id is not None and vocab.eos_id is not None
    expected_ids = (CORPUS_GGUF / f"ggml-vocab-{name}.gguf.out").read_text().split()
    assert all(int(i) < len(vocab.tokens) for i in expected_ids)  # llama.cpp's test vectors index this vocab


@needs_corpus
def test_gpt2_vocab_has_bpe_defaults() -> None:
    path = CORPUS_GGUF / "ggml-vocab-gpt-2.gguf"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    vocab = read_gguf_vocab(path)
    assert (vocab.tokenizer_model, vocab.tokenizer_pre) == ("gpt2", "gpt-2")
    assert vocab.add_bos_token is None and vocab.add_bos is False  # BPE with the gpt-2 pre-tokenizer adds no BOS
    assert vocab.bos_text == vocab.eos_text == "<|endoftext|>"


def test_missing_template_and_absent_flags(tmp_path: Path) -> None:
    vocab = read_gguf_vocab(write_gguf(tmp_path / "plain.gguf"))
    assert vocab.chat_template is None
    assert vocab.add_bos_token is None and vocab.add_bos is True  # llama.cpp's default for SPM vocabs
    assert vocab.end_of_turn_ids == (2, 3)


def test_named_templates_and_add_bos_false(tmp_path: Path) -> None:
    templates = [{"name": "default", "template": "{{ messages }}"}, {"name": "tool_use", "template": "{{ tools }}"}]
    vocab = read_gguf_vocab(write_gguf(tmp_path / "named.gguf", template=templates, add_bos=False))
    assert vocab.chat_template == "{{ messages }}"
    assert vocab.named_chat_templates == {"tool_use": "{{ tools }}"}
    assert vocab.add_bos is False


def test_special_id_outside_vocab_falls_back_to_default(tmp_path: Path) -> None:
    vocab = read_gguf_vocab(write_gguf(tmp_path / "badbos.gguf", bos_id=999))
    assert vocab.bos_id == 1  # llama.cpp warns and keeps the model's default id


def test_token_id_out_of_range_names_the_file(tmp_path: Path) -> None:
    vocab = read_gguf_vocab(write_gguf(tmp_path / "v.gguf"))
    with pytest.raises(InputError, match="v.gguf: token id 99 is outside the vocabulary of 5 tokens"):
        vocab.token_text(99)


def test_wrong_metadata_type_is_an_input_error(tmp_path: Path) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "t.gguf"), arch="llama")
    writer.add_string("tokenizer.ggml.bos_token_id", "one")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(InputError, match="tokenizer.ggml.bos_token_id should be an integer, found string"):
        read_gguf_vocab(tmp_path / "t.gguf")


def _tiny_bytes(tmp_path: Path) -> bytes:
    return write_gguf(tmp_path / "tiny.gguf", template="{{ bos_token }}").read_bytes()


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"", "not a GGUF file (0 bytes"),
        (lambda b: b"PK\x03\x04" + b[4:], "not a GGUF file (starts with"),
        (lambda b: b[: len(b) // 2], "truncated"),
        (lambda b: b[: b.index(b"{{ bos_token }}") + 5], "string value of tokenizer.chat_template"),
        (lambda b: b[:16] + struct.pack("<Q", 2**62) + b[24:], "claims 4611686018427387904 entries"),
        (lambda b: b[:8] + struct.pack("<Q", 2**40) + b[16:], "the tensor table claims 1099511627776 tensors"),
        (lambda b: b[:4] + struct.pack("<I", 7) + b[8:], "unsupported GGUF version 7"),
        (lambda b: b[:4] + struct.pack(">I", 3) + b[8:], "big-endian GGUF"),
    ],
)
def test_broken_files_fail_with_one_line(tmp_path: Path, mutate: object, message: str) -> None:
    path = tmp_path / "broken.gguf"
    path.write_bytes(mutate(_tiny_bytes(tmp_path)))
    with pytest.raises(InputError) as caught:
        read_gguf_vocab(path)
    assert message in caught.value.message
    assert str(path) in caught.value.message and "\n" not in caught.value.message


def test_array_claiming_billions_of_entries(tmp_path: Path) -> None:
    data = _tiny_bytes(tmp_path)
    key = b"tokenizer.ggml.tokens"
    count_at = data.index(key) + len(key) + 4 + 4  # value type, item type
    path = tmp_path / "huge_array.gguf"
    path.write_bytes(data[:count_at] + struct.pack("<Q", 3 * 10**9) + data[count_at + 8 :])
    with pytest.raises(InputError, match="array tokenizer.ggml.tokens claims 3000000000 entries"):
        read_gguf_vocab(path)


def test_every_cut_inside_the_metadata_fails_with_one_line(tmp_path: Path) -> None:
    template = b"{{ bos_token }}"  # the last value: after it comes padding only
    data = write_gguf(tmp_path / "full.gguf", template=template.decode(), merges=["h i", "<s> hi"]).read_bytes()
    path = tmp_path / "cut.gguf"
    for keep in range(data.index(template) + len(template)):
        path.write_bytes(data[:keep])
        with pytest.raises(InputError) as caught:
            read_gguf_vocab(path)
        assert str(path) in caught.value.message and "\n" not in caught.value.message, keep


@pytest.mark.parametrize(("element", "key"), [(b"hi", "tokens"), (b"h i", "merges")])  # decoded, stepped over
def test_array_element_longer_than_the_file(tmp_path: Path, element: bytes, key: str) -> None:
    data = write_gguf(tmp_path / "v.gguf", merges=["h i"]).read_bytes()
    at = data.index(struct.pack("<Q", len(element)) + element)
    path = tmp_path / "long_element.gguf"
    path.write_bytes(data[:at] + struct.pack("<Q", 2**40) + data[at + 8 :])
    with pytest.raises(
        InputError, match=f"an element of tokenizer.ggml.{key} of 1099511627776 bytes runs past the end"
    ):
        read_gguf_vocab(path)


def _with_tensors(path: Path, alignment: int | str = 32) -> bytes:
    writer = gguf.GGUFWriter(str(path), arch="llama")
    kind = gguf.GGUFValueType.STRING if isinstance(alignment, str) else gguf.GGUFValueType.UINT32
    writer.add_key_value("general.alignment", alignment, kind)
    writer.add_tensor("tensor_one", np.zeros((2, 32), dtype=np.float32))
    writer.add_tensor("tensor_two", np.zeros((2, 32), dtype=np.float32))
    return finish(writer, path).read_bytes()


def _rows_of_33_q8_0(data: bytes) -> bytes:
    info = data.index(b"tensor_one") + len(b"tensor_one") + 4  # after the name and n_dims
    return data[:info] + struct.pack("<Q", 33) + data[info + 8 : info + 16] + struct.pack("<I", 8) + data[info + 20 :]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda d: write_gguf(d / "s.gguf").read_bytes().replace(b"ggml.eot_token_id", b"ggml.eos_token_id"),
         "metadata key tokenizer.ggml.eos_token_id appears twice"),
        (lambda d: _with_tensors(d / "s.gguf").replace(b"tensor_two", b"tensor_one"), "tensor 'tensor_one' appears twice"),
        (lambda d: _with_tensors(d / "s.gguf", alignment="32"), "general.alignment is a string, expected a uint32"),
        (lambda d: _rows_of_33_q8_0(_with_tensors(d / "s.gguf")),
         "tensor 'tensor_one' has rows of 33 elements, not a multiple of its block size 32"),
    ],
    ids=["duplicate-key", "duplicate-tensor", "alignment-type", "block-size"],
)  # fmt: skip
def test_files_llama_cpp_refuses_fail_with_one_line(tmp_path: Path, build: object, message: str) -> None:
    path = tmp_path / "refused.gguf"
    path.write_bytes(build(tmp_path))
    with pytest.raises(InputError) as caught:
        read_gguf_vocab(path)
    assert message in caught.value.message and str(path) in caught.value.message


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read file"):
        read_gguf_vocab(tmp_path / "absent.gguf")
    with pytest.raises(InputError, match=r"not a regular file \(a folder\)"):
        read_gguf_vocab(tmp_path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_corruption_reads_or_fails_cleanly(tmp_path: Path, data: st.DataObject) -> None:
    original = _tiny_bytes(tmp_path)
    mutated = bytearray(original[: data.draw(st.integers(0, len(original)), label="keep")])
    for _ in range(data.draw(st.integers(0, 4), label="flips")):
        if mutated:
            mutated[data.draw(st.integers(0, len(mutated) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "fuzz.gguf"
    path.write_bytes(bytes(mutated))
    try:
        read_gguf_vocab(path)
    except InputError as exc:
        assert "\n" not in exc.message


def test_a_key_name_with_a_newline_stays_on_one_line_in_the_error(tmp_path: Path) -> None:
    """Found by the corruption property: a flipped byte made a key name hold a newline, and the message two lines."""
    data = bytearray(_tiny_bytes(tmp_path))
    key = data.index(b"general.architecture")
    data[key + 3] = ord("\n")
    length_at = key + len(b"general.architecture") + 4  # after the key: the value's type, then the string's length
    data[length_at:length_at + 8] = struct.pack("<Q", 10**6)
    path = tmp_path / "newline-key.gguf"
    path.write_bytes(bytes(data))
    with pytest.raises(InputError) as caught:
        read_gguf_vocab(path)
    assert "\n" not in caught.value.message and "gen\\nral.architecture" in caught.value.message
