"""GGUF metadata reading on llama.cpp's own vocab files, tiny files written with gguf.GGUFWriter, and broken files."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mldebug_cli.core.errors import InputError
from mldebug_cli.sources.gguf_file import read_gguf_vocab

ROOT = Path(__file__).resolve().parents[2]
PHI3 = ROOT / "fixtures" / "gguf" / "ggml-vocab-phi-3.gguf"
CORPUS_GGUF = ROOT.parent / "shared" / "corpus" / "gguf"


def write_gguf(
    path: Path,
    *,
    template: object = None,
    add_bos: bool | None = None,
    bos_id: int = 1,
    tokens: tuple[str, ...] = ("<unk>", "<s>", "</s>", "<|im_end|>", "hi"),
) -> Path:
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name("tiny")
    writer.add_tokenizer_model("llama")
    writer.add_token_list(list(tokens))
    writer.add_token_types([gguf.TokenType.CONTROL] * 4 + [gguf.TokenType.NORMAL] * (len(tokens) - 4))
    writer.add_bos_token_id(bos_id)
    writer.add_eos_token_id(2)
    writer.add_eot_token_id(3)
    if add_bos is not None:
        writer.add_add_bos_token(add_bos)
    if template is not None:
        writer.add_chat_template(template)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


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


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read file"):
        read_gguf_vocab(tmp_path / "absent.gguf")
    with pytest.raises(InputError, match="cannot read file"):
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
