"""Read the tokenizer and chat-template metadata of a GGUF file the way llama.cpp resolves it.

One bounded pass over the header over a read-only memory map: every length is checked against the file
size, so a corrupt, truncated or hostile file fails with one ``InputError`` instead of a traceback, a hang
or a huge allocation. The values mldebug uses (tokens, token types, special ids, add_bos/add_eos, chat
templates) are decoded on the way; every other value (merges, scores) is stepped over by its length, and
tensor data is never touched. ``gguf.GGUFReader`` builds numpy views of every field and tensor (seconds on
a 150k-token vocabulary); it stays as the reference the walker is tested and benchmarked against
(``_vocab_from_reader``).
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFValueType, Keys, TokenType
from gguf.gguf_reader import ReaderField

from mldebug_cli.core.errors import InputError, in_one_line
from mldebug_cli.core.safe_io import open_regular

_MAGIC = b"GGUF"
_SUPPORTED_VERSIONS = (2, 3)
_HEADER_SIZE = 24  # magic, version, tensor count, kv count
_MAX_KEY_BYTES = 65535
_MAX_TENSOR_DIMS = 4  # GGML_MAX_DIMS
_DEFAULT_ALIGNMENT = 32
_MIN_KV_BYTES = 8 + 4 + 1  # key length, value type, smallest value
_MIN_TENSOR_INFO_BYTES = 8 + 1 + 4 + 4 + 8  # name length, 1-byte name, n_dims, type, offset
# An array of strings (the vocabulary, the merges) of more items than this is refused before its items are walked:
# the largest real vocabularies hold ~262k tokens and ~500k merges; 400 M empty strings fit in a 3.2 GB file and
# would take minutes to step over and tens of GiB as Python strings.
MAX_STRING_ARRAY_ITEMS = 2**22
MAX_DECODED_ARRAY_ITEMS = 2**22  # a decoded array of numbers (token types, EOS ids)
MAX_DECODED_STRING_BYTES = 256 * 2**20  # the text of one decoded array of strings (a real vocabulary: a few MB)

_SCALAR_FORMATS = {
    GGUFValueType.UINT8: "B",
    GGUFValueType.INT8: "b",
    GGUFValueType.BOOL: "?",
    GGUFValueType.UINT16: "H",
    GGUFValueType.INT16: "h",
    GGUFValueType.UINT32: "I",
    GGUFValueType.INT32: "i",
    GGUFValueType.FLOAT32: "f",
    GGUFValueType.UINT64: "Q",
    GGUFValueType.INT64: "q",
    GGUFValueType.FLOAT64: "d",
}
_SCALAR_SIZES = {kind: struct.calcsize("<" + fmt) for kind, fmt in _SCALAR_FORMATS.items()}
_INTEGER_TYPES = frozenset(_SCALAR_SIZES) - {GGUFValueType.FLOAT32, GGUFValueType.FLOAT64, GGUFValueType.BOOL}
_LENGTH = struct.Struct("<Q")

TEMPLATE_KEY = Keys.Tokenizer.CHAT_TEMPLATE
_NAMED_TEMPLATE_PREFIX = Keys.Tokenizer.CHAT_TEMPLATE_N.format(name="")
_EOS_IDS_KEY = "tokenizer.ggml.eos_token_ids"  # written by Ollama's converter; gguf-py has no name for it
_SPECIAL_ID_KEYS = {
    "bos": Keys.Tokenizer.BOS_ID,
    "eos": Keys.Tokenizer.EOS_ID,
    "eot": Keys.Tokenizer.EOT_ID,
    "eom": Keys.Tokenizer.EOM_ID,
    "pad": Keys.Tokenizer.PAD_ID,
    "unk": Keys.Tokenizer.UNK_ID,
}
# The keys whose values are decoded (plus every tokenizer.chat_template.<name>); all others are skipped.
_DECODED_KEYS = frozenset(
    {
        Keys.General.ARCHITECTURE,
        Keys.General.NAME,
        Keys.Tokenizer.MODEL,
        Keys.Tokenizer.PRE,
        Keys.Tokenizer.LIST,
        Keys.Tokenizer.TOKEN_TYPE,
        Keys.Tokenizer.ADD_BOS,
        Keys.Tokenizer.ADD_EOS,
        TEMPLATE_KEY,
        _EOS_IDS_KEY,
        *_SPECIAL_ID_KEYS.values(),
    }
)

# llama.cpp's defaults per tokenizer model (src/llama-vocab.cpp, llama_vocab::impl::load), used when a key is absent.
_DEFAULT_SPECIAL_IDS: dict[str, dict[str, int]] = {
    "llama": {"bos": 1, "eos": 2, "unk": 0},
    "bert": {"bos": 101, "unk": 100, "pad": 0},
    "gpt2": {"bos": 11, "eos": 11},
    "t5": {"eos": 1, "unk": 2, "pad": 0},
    "plamo2": {"bos": 1, "eos": 2, "unk": 0, "pad": 3},
}
_DEFAULT_ADD_BOS_EOS = {"llama": (True, False), "bert": (True, False), "t5": (False, True), "rwkv": (False, False)}
_BPE_PRE_TOKENIZERS_ADDING_BOS = frozenset(
    {
        "llama3",
        "llama-v3",
        "llama-bpe",
        "falcon3",
        "falcon-h1",
        "pixtral",
        "midm-2.0",
        "lfm2",
        "jina-v5-nano",
        "tekken",
        "chameleon",
        "gemma4",
    }
)
# Token texts llama.cpp treats as end-of-generation whatever the metadata says (llama-vocab.cpp special_eog_ids).
_EOG_TEXTS = frozenset(
    {
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<｜end▁of▁sentence｜>",
        "[e~[",
    }
)


@dataclass(frozen=True)
class GGUFVocab:
    """A GGUF's tokenizer and chat templates; special ids and add_bos/add_eos resolved as llama.cpp does."""

    path: str
    name: str | None
    architecture: str | None
    tokenizer_model: str | None
    tokenizer_pre: str | None
    chat_template: str | None
    named_chat_templates: Mapping[str, str]
    tokens: tuple[str, ...]
    token_types: tuple[int, ...]
    bos_id: int | None
    eos_id: int | None
    eot_id: int | None
    eom_id: int | None
    pad_id: int | None
    unk_id: int | None
    add_bos_token: bool | None  # the metadata value, None when the key is absent
    add_eos_token: bool | None
    eos_token_ids: tuple[int, ...] = ()  # tokenizer.ggml.eos_token_ids as written; Ollama's engine stops on them
    tensor_count: int = 0
    metadata_keys: tuple[str, ...] = field(default=(), repr=False)

    @property
    def add_bos(self) -> bool:
        """Whether llama.cpp prepends BOS when tokenizing (metadata, else the tokenizer model's default)."""
        if self.add_bos_token is not None:
            return self.add_bos_token
        return _default_add_bos_eos(self.tokenizer_model, self.tokenizer_pre)[0]

    @property
    def add_eos(self) -> bool:
        if self.add_eos_token is not None:
            return self.add_eos_token
        return _default_add_bos_eos(self.tokenizer_model, self.tokenizer_pre)[1]

    @property
    def bos_text(self) -> str:
        """What llama.cpp passes to templates as ``bos_token`` ("" when the vocab has none)."""
        return "" if self.bos_id is None else self.tokens[self.bos_id]

    @property
    def eos_text(self) -> str:
        return "" if self.eos_id is None else self.tokens[self.eos_id]

    @property
    def end_of_turn_ids(self) -> tuple[int, ...]:
        """EOS, EOT and EOM ids declared by the file (deduplicated, in that order)."""
        ids = (self.eos_id, self.eot_id, self.eom_id)
        return tuple(dict.fromkeys(i for i in ids if i is not None))

    @property
    def end_of_generation_ids(self) -> tuple[int, ...]:
        """``end_of_turn_ids`` plus tokens llama.cpp stops on because of their text (e.g. ``<|end|>``)."""
        by_text = (i for i, text in enumerate(self.tokens) if text in _EOG_TEXTS)
        return tuple(dict.fromkeys((*self.end_of_turn_ids, *by_text)))

    @property
    def special_tokens(self) -> dict[int, str]:
        """Control tokens plus every declared special id, id -> text."""
        declared = (self.bos_id, self.eos_id, self.eot_id, self.eom_id, self.pad_id, self.unk_id)
        ids = {i for i, kind in enumerate(self.token_types) if kind == TokenType.CONTROL}
        ids.update(i for i in declared if i is not None)
        return {i: self.tokens[i] for i in sorted(ids)}

    def token_text(self, token_id: int) -> str:
        if not 0 <= token_id < len(self.tokens):
            raise InputError(f"{self.path}: token id {token_id} is outside the vocabulary of {len(self.tokens)} tokens")
        return self.tokens[token_id]


def read_gguf_vocab(path: str | Path) -> GGUFVocab:
    """Read a GGUF's tokenizer metadata; every malformed input raises ``InputError`` naming the file."""
    path = Path(path)
    metadata = _read_metadata(path)
    return _vocab_from_fields(path, metadata.fields, metadata.keys, metadata.tensor_count)


def _one_line(exc: BaseException) -> str:
    return in_one_line(exc) or type(exc).__name__


def _default_add_bos_eos(tokenizer_model: str | None, tokenizer_pre: str | None) -> tuple[bool, bool]:
    if tokenizer_model == "gpt2":
        return tokenizer_pre in _BPE_PRE_TOKENIZERS_ADDING_BOS, False
    return _DEFAULT_ADD_BOS_EOS.get(tokenizer_model or "", (False, False))


# --- the walk: one bounded pass over the header of a read-only memory map ---


class _Field(NamedTuple):
    """One decoded metadata value: its type (``(ARRAY, item type)`` for a non-empty array) and value."""

    types: tuple[GGUFValueType, ...]
    value: Any  # str, int, float, bool, or a tuple of them for an array


def printable(text: str) -> str:
    """Text from the file (a key name) fit for a one-line message: control characters escaped as Python does."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@dataclass(frozen=True)
class _Metadata:
    fields: Mapping[str, _Field]  # the decoded keys only
    keys: tuple[str, ...]  # every key, in file order
    tensor_count: int


class _Cursor:
    """Reads little-endian values from a memory map, refusing to go past its end."""

    def __init__(self, path: Path, buffer: mmap.mmap) -> None:
        self.path = path
        self.buffer = buffer
        self.offset = 0

    @property
    def remaining(self) -> int:
        return len(self.buffer) - self.offset

    def fail(self, what: str) -> InputError:
        return InputError(f"{self.path}: corrupt GGUF: {printable(what)} (at byte {self.offset})")

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if size > self.remaining:
            raise self.fail("file ends inside the metadata (truncated)")
        (value,) = struct.unpack_from(fmt, self.buffer, self.offset)
        self.offset += size
        return value

    def skip(self, size: int, what: str) -> None:
        if size > self.remaining:
            raise self.fail(f"{what} of {size} bytes runs past the end of the file (truncated or corrupt length)")
        self.offset += size

    def skip_string(self, what: str) -> int:
        """Skip a length-prefixed string without copying it; return where its bytes start."""
        length = self.take("<Q")
        start = self.offset
        self.skip(length, what)
        return start

    def short_string(self, what: str) -> bytes:
        length = self.take("<Q")
        if length > _MAX_KEY_BYTES:
            raise self.fail(f"{what} is {length} bytes long (at most {_MAX_KEY_BYTES})")
        start = self.offset
        self.skip(length, what)
        return bytes(self.buffer[start : self.offset])

    def count(self, what: str, min_item_bytes: int) -> int:
        value = self.take("<Q")
        if value * min_item_bytes > self.remaining:
            raise self.fail(f"{what} claims {value} entries, more than the {self.remaining} bytes left can hold")
        return value

    def bounded_count(self, what: str, min_item_bytes: int, most: int) -> int:
        """An array's item count, within what the bytes left can hold and at most ``most`` (before any item is read)."""
        value = self.count(what, min_item_bytes)
        if value > most:
            self.offset -= 8
            raise self.fail(f"{what} claims {value:,} entries; mldebug reads at most {most:,} (no real vocabulary or "
                            "merge list comes near)")
        return value

    def string_spans(self, count: int, what: str) -> Iterator[tuple[int, int]]:
        """Where each of ``count`` length-prefixed strings (an array's elements) starts and ends, in one tight loop."""
        buffer, offset, end = self.buffer, self.offset, len(self.buffer)
        unpack = _LENGTH.unpack_from
        for _ in range(count):
            if offset + 8 > end:
                self.offset = offset
                raise self.fail("file ends inside the metadata (truncated)")
            (length,) = unpack(buffer, offset)
            start, offset = offset + 8, offset + 8 + length
            if offset > end:
                self.offset = start
                raise self.fail(f"{what} of {length} bytes runs past the end of the file (truncated or corrupt length)")
            yield start, offset
        self.offset = offset


def _read_metadata(path: Path) -> _Metadata:
    try:
        with open_regular(path) as handle:
            size = path.stat().st_size
            if size < _HEADER_SIZE:
                raise InputError(f"{path}: not a GGUF file ({size} bytes, too short for a GGUF header)")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as buffer:
                return _walk(_Cursor(path, buffer))
    except OSError as exc:
        raise InputError(f"{path}: cannot read file ({exc.strerror or _one_line(exc)})") from exc


def _walk(cursor: _Cursor) -> _Metadata:
    tensor_count, kv_count = _header(cursor)
    fields: dict[str, _Field] = {}
    keys: dict[bytes, None] = {}
    alignment = _DEFAULT_ALIGNMENT
    for _ in range(kv_count):
        raw_key = cursor.short_string("a metadata key")
        key = raw_key.decode("utf-8", "replace")
        if raw_key in keys:
            raise cursor.fail(f"metadata key {key} appears twice")
        keys[raw_key] = None
        value_type = _value_type(cursor, cursor.take("<I"))
        if key == Keys.General.ALIGNMENT:
            alignment = _alignment(cursor, value_type)
        elif key in _DECODED_KEYS or key.startswith(_NAMED_TEMPLATE_PREFIX):
            fields[key] = _read_value(cursor, value_type, key)
        else:
            _skip_value(cursor, value_type, key)
    _check_tensors(cursor, tensor_count, alignment)
    return _Metadata(fields, tuple(k.decode("utf-8", "replace") for k in keys), tensor_count)


def _header(cursor: _Cursor) -> tuple[int, int]:
    """Check magic and version; return the tensor count and the (plausible) metadata key count."""
    magic = bytes(cursor.buffer[:4])
    if magic != _MAGIC:
        raise InputError(f"{cursor.path}: not a GGUF file (starts with {magic!r}, expected b'GGUF')")
    cursor.offset = 4
    version = cursor.take("<I")
    if version & 0xFFFF == 0 and version:
        raise InputError(f"{cursor.path}: big-endian GGUF, which llama.cpp does not load on this machine")
    if version not in _SUPPORTED_VERSIONS:
        raise InputError(f"{cursor.path}: unsupported GGUF version {version} (supported: 2, 3)")
    tensor_count = cursor.take("<Q")
    return tensor_count, cursor.count("the metadata table", _MIN_KV_BYTES)


def _value_type(cursor: _Cursor, raw: int) -> GGUFValueType:
    try:
        return GGUFValueType(raw)
    except ValueError:
        raise cursor.fail(f"unknown metadata value type {raw}") from None


def _item_type(cursor: _Cursor, key: str) -> GGUFValueType:
    item_type = _value_type(cursor, cursor.take("<I"))
    if item_type == GGUFValueType.ARRAY:
        raise cursor.fail(f"{key} is an array of arrays, which llama.cpp does not support")
    return item_type


def _alignment(cursor: _Cursor, value_type: GGUFValueType) -> int:
    if value_type != GGUFValueType.UINT32:
        raise cursor.fail(f"{Keys.General.ALIGNMENT} is a {value_type.name.lower()}, expected a uint32")
    alignment = cursor.take("<I")
    if alignment == 0 or alignment & (alignment - 1):
        raise cursor.fail(f"{Keys.General.ALIGNMENT} {alignment} is not a power of two")
    return alignment


def _read_value(cursor: _Cursor, value_type: GGUFValueType, key: str) -> _Field:
    buffer = cursor.buffer
    if value_type in _SCALAR_FORMATS:
        start = cursor.offset
        cursor.skip(_SCALAR_SIZES[value_type], f"value of {key}")
        return _Field((value_type,), struct.unpack_from("<" + _SCALAR_FORMATS[value_type], buffer, start)[0])
    if value_type == GGUFValueType.STRING:
        start = cursor.skip_string(f"string value of {key}")
        return _Field((value_type,), _decode(buffer[start : cursor.offset]))
    item_type = _item_type(cursor, key)
    if item_type == GGUFValueType.STRING:
        items: tuple[Any, ...] = _decoded_strings(cursor, key)
    else:
        item_size = _SCALAR_SIZES[item_type]
        count = cursor.bounded_count(f"array {key}", item_size, MAX_DECODED_ARRAY_ITEMS)
        start = cursor.offset
        cursor.skip(count * item_size, f"array {key}")
        items = struct.unpack_from(f"<{count}{_SCALAR_FORMATS[item_type]}", buffer, start)
    # An empty array has no element to give its item type (as GGUFReader reports it).
    return _Field((value_type, item_type) if items else (value_type,), items)


def _decoded_strings(cursor: _Cursor, key: str) -> tuple[str, ...]:
    """An array of strings, decoded; its text within ``MAX_DECODED_STRING_BYTES`` (checked as it is decoded)."""
    count = cursor.bounded_count(f"array {key}", 8, MAX_STRING_ARRAY_ITEMS)
    items: list[str] = []
    total = 0
    for start, end in cursor.string_spans(count, f"an element of {key}"):
        total += end - start
        if total > MAX_DECODED_STRING_BYTES:
            raise cursor.fail(f"array {key} holds over {MAX_DECODED_STRING_BYTES // 2**20} MiB of text; mldebug "
                              "reads at most that much")
        items.append(cursor.buffer[start:end].decode("utf-8", "replace"))
    return tuple(items)


def _skip_value(cursor: _Cursor, value_type: GGUFValueType, key: str) -> None:
    if value_type in _SCALAR_SIZES:
        cursor.skip(_SCALAR_SIZES[value_type], f"value of {key}")
    elif value_type == GGUFValueType.STRING:
        cursor.skip_string(f"string value of {key}")
    else:
        item_type = _item_type(cursor, key)
        if item_type == GGUFValueType.STRING:
            count = cursor.bounded_count(f"array {key}", 8, MAX_STRING_ARRAY_ITEMS)
            for _ in cursor.string_spans(count, f"an element of {key}"):
                pass  # merges: stepped over by their lengths, nothing copied
        else:
            item_size = _SCALAR_SIZES[item_type]
            cursor.skip(cursor.count(f"array {key}", item_size) * item_size, f"array {key}")


def _check_tensors(cursor: _Cursor, tensor_count: int, alignment: int) -> None:
    """Walk the tensor table (not the data) and check every tensor's data lies inside the file."""
    if tensor_count * _MIN_TENSOR_INFO_BYTES > cursor.remaining:
        raise cursor.fail(f"the tensor table claims {tensor_count} tensors, more than the file can hold")
    ends: dict[str, int] = {}
    for _ in range(tensor_count):
        name, end = _tensor_info(cursor)
        if name in ends:
            raise cursor.fail(f"tensor {name!r} appears twice")
        ends[name] = end
    data_start = -(-cursor.offset // alignment) * alignment
    for name, end in ends.items():
        if data_start + end > len(cursor.buffer):
            raise cursor.fail(f"tensor {name!r} data runs past the end of the file (truncated)")


def _tensor_info(cursor: _Cursor) -> tuple[str, int]:
    """Validate one tensor description; return its name and the end of its data relative to the data section."""
    name = cursor.short_string("a tensor name").decode("utf-8", "replace")
    n_dims = cursor.take("<I")
    if n_dims > _MAX_TENSOR_DIMS:
        raise cursor.fail(f"tensor {name!r} has {n_dims} dimensions (at most {_MAX_TENSOR_DIMS})")
    dims = [cursor.take("<Q") for _ in range(n_dims)]
    raw_type = cursor.take("<I")
    try:
        block_size, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(raw_type)]
    except (ValueError, KeyError):
        raise cursor.fail(f"tensor {name!r} has unknown type {raw_type}") from None
    if dims and dims[0] % block_size:
        raise cursor.fail(
            f"tensor {name!r} has rows of {dims[0]} elements, not a multiple of its block size {block_size}"
        )
    n_elements = 1
    for dim in dims:
        n_elements *= dim
    offset = cursor.take("<Q")
    return name, offset + n_elements * type_size // block_size


# --- from decoded values to a GGUFVocab (the same rules for the walker's values and GGUFReader's) ---


def _vocab_from_fields(path: Path, fields: Mapping[str, _Field], keys: tuple[str, ...], tensor_count: int) -> GGUFVocab:
    tokens = _string_array(path, fields, Keys.Tokenizer.LIST)
    tokenizer_model = _string(path, fields, Keys.Tokenizer.MODEL)
    special = _special_ids(path, fields, tokenizer_model, len(tokens))
    return GGUFVocab(
        path=str(path),
        name=_string(path, fields, Keys.General.NAME),
        architecture=_string(path, fields, Keys.General.ARCHITECTURE),
        tokenizer_model=tokenizer_model,
        tokenizer_pre=_string(path, fields, Keys.Tokenizer.PRE),
        chat_template=_string(path, fields, TEMPLATE_KEY),
        named_chat_templates=_named_templates(path, fields),
        tokens=tokens,
        token_types=_int_array(path, fields, Keys.Tokenizer.TOKEN_TYPE),
        bos_id=special["bos"],
        eos_id=special["eos"],
        eot_id=special["eot"],
        eom_id=special["eom"],
        pad_id=special["pad"],
        unk_id=special["unk"],
        add_bos_token=_bool(path, fields, Keys.Tokenizer.ADD_BOS),
        add_eos_token=_bool(path, fields, Keys.Tokenizer.ADD_EOS),
        eos_token_ids=_int_array(path, fields, _EOS_IDS_KEY),
        tensor_count=tensor_count,
        metadata_keys=keys,
    )


def _wrong_type(path: Path, key: str, expected: str, types: tuple[GGUFValueType, ...]) -> InputError:
    found = "/".join(t.name.lower() for t in types) or "nothing"
    return InputError(f"{path}: metadata key {printable(key)} should be {expected}, found {found}")


def _decode(raw: Any) -> str:
    return bytes(raw).decode("utf-8", errors="replace")


def _string(path: Path, fields: Mapping[str, _Field], key: str) -> str | None:
    found = fields.get(key)
    if found is None:
        return None
    if found.types != (GGUFValueType.STRING,):
        raise _wrong_type(path, key, "a string", found.types)
    return found.value


def _bool(path: Path, fields: Mapping[str, _Field], key: str) -> bool | None:
    found = fields.get(key)
    if found is None:
        return None
    if found.types != (GGUFValueType.BOOL,):
        raise _wrong_type(path, key, "a bool", found.types)
    return bool(found.value)


def _int(path: Path, fields: Mapping[str, _Field], key: str) -> int | None:
    found = fields.get(key)
    if found is None:
        return None
    if len(found.types) != 1 or found.types[0] not in _INTEGER_TYPES:
        raise _wrong_type(path, key, "an integer", found.types)
    return int(found.value)


def _string_array(path: Path, fields: Mapping[str, _Field], key: str) -> tuple[str, ...]:
    found = fields.get(key)
    if found is None:
        return ()
    if found.types[0] != GGUFValueType.ARRAY or (len(found.types) > 1 and found.types[-1] != GGUFValueType.STRING):
        raise _wrong_type(path, key, "an array of strings", found.types)
    return found.value


def _int_array(path: Path, fields: Mapping[str, _Field], key: str) -> tuple[int, ...]:
    found = fields.get(key)
    if found is None:
        return ()
    if found.types[0] != GGUFValueType.ARRAY or (len(found.types) > 1 and found.types[-1] not in _INTEGER_TYPES):
        raise _wrong_type(path, key, "an array of integers", found.types)
    return found.value


def _named_templates(path: Path, fields: Mapping[str, _Field]) -> dict[str, str]:
    names = (k for k in fields if k.startswith(_NAMED_TEMPLATE_PREFIX))
    return {k[len(_NAMED_TEMPLATE_PREFIX) :]: _string(path, fields, k) or "" for k in names}


def _special_ids(
    path: Path, fields: Mapping[str, _Field], tokenizer_model: str | None, n_tokens: int
) -> dict[str, int | None]:
    """Metadata ids, else llama.cpp's per-model defaults; ids outside the vocabulary count as absent."""
    defaults = _DEFAULT_SPECIAL_IDS.get(tokenizer_model or "", {})
    resolved: dict[str, int | None] = {}
    for kind, key in _SPECIAL_ID_KEYS.items():
        declared = _int(path, fields, key)
        default = defaults.get(kind)
        default = default if default is not None and default < n_tokens else None
        resolved[kind] = declared if declared is not None and 0 <= declared < n_tokens else default
    return resolved


# --- the reference: the same vocab through gguf.GGUFReader (tests/sources/test_gguf_file.py, benchmarks/) ---


def _vocab_from_reader(path: Path, reader: GGUFReader) -> GGUFVocab:
    """The GGUFVocab of an already opened ``GGUFReader``, decoded by gguf-py instead of the walker."""
    fields = {
        key: _field_from_reader(found)
        for key, found in reader.fields.items()
        if key in _DECODED_KEYS or key.startswith(_NAMED_TEMPLATE_PREFIX)
    }
    keys = tuple(k for k in reader.fields if not k.startswith("GGUF."))  # GGUF.* are the reader's header pseudo-keys
    return _vocab_from_fields(path, fields, keys, len(reader.tensors))


def _field_from_reader(found: ReaderField) -> _Field:
    types = tuple(found.types)
    if types[0] == GGUFValueType.STRING:
        return _Field(types, _decode(found.parts[-1]))
    if types[0] != GGUFValueType.ARRAY:
        return _Field(types, found.parts[-1][0].item())
    if types[-1] == GGUFValueType.STRING:
        return _Field(types, tuple(_decode(found.parts[i]) for i in found.data))
    return _Field(types, tuple(found.parts[i][0].item() for i in found.data))
