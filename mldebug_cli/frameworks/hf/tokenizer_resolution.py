"""Which tokenizer a transformers release builds from a folder's files, and that tokenizer, built as it does.

Recorded from the wheels (tools/version_facts.py, ``tokenizer_rebuilds`` and ``byte_level_llama_guard``):

- transformers 4.x: ``AutoTokenizer`` takes the declared class's fast tokenizer, which loads tokenizer.json as it
  is (normalizer, pre-tokenizer, model, decoder and post-processor all from the file).
- 5.0 to 5.21: the declared class (``tokenizer_config.json``'s ``tokenizer_class``) is instantiated, and a class
  whose ``__init__`` builds its own pipeline keeps only the vocabulary, merges and post-processor of tokenizer.json:
  ``LlamaTokenizer`` sets no normalizer, a Metaspace pre-tokenizer (``▁``, prepend "always" when ``legacy``, else
  "first"; "never" with ``add_prefix_space: false``), a BPE with ``byte_fallback`` and the decoder
  Replace(``▁``)/ByteFallback/Fuse/Strip. Over a byte-level BPE file (DeepSeek-V3: space is ``Ġ``, newline ``Ċ``)
  every space and newline maps to no token and is lost.
- from 5.22: a declared ``LlamaTokenizer`` whose tokenizer.json is ByteLevel loads as ``TokenizersBackend`` (the file
  as it is). Other classes still rebuild from their defaults.
- 4.x (``prefix_space_needs_slow``): ``LlamaTokenizerFast`` given ``add_prefix_space`` (any value, e.g. Qwen2.5's
  ``false`` kept under a Llama class) converts from the slow tokenizer, which needs ``tokenizer.model``; a folder
  without it is refused (``ValueError: Cannot instantiate this tokenizer from a slow version``): the run stops.

tests/frameworks/test_tokenizer_resolution.py holds :func:`emulate` to real transformers releases on each side of
both changes (fixtures/tokenizer-resolution/goldens.json, by tools/tokenizer_resolution_goldens.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mldebug_cli.frameworks import record, versions

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from mldebug_cli.sources.tokenizer import LoadedTokenizer

# the pre-tokenizer type names that mean "bytes, not characters" (the file's own)
BYTE_LEVEL = "ByteLevel"
METASPACE = "Metaspace"
COMPARED = frozenset({BYTE_LEVEL, METASPACE})  # the kinds whose mismatch loses text (others are not judged)
LLAMA = "LlamaTokenizer"
# classes that keep tokenizer.json as it is in every release
FILE_AS_IS = frozenset({"PreTrainedTokenizerFast", "TokenizersBackend", "PythonBackend"})


@dataclass(frozen=True)
class Resolution:
    """How ``transformers_version`` loads one tokenizer folder."""

    folder: str
    declared: str | None  # tokenizer_config.json's tokenizer_class ("LlamaTokenizerFast")
    file_pre_tokenizer: str | None  # tokenizer.json's pre-tokenizer kind ("ByteLevel", "Metaspace", ...)
    class_pre_tokenizer: str | None  # what the declared class builds instead at this release (None: the file's)
    transformers_version: str | None
    loaded_as: str  # the class AutoTokenizer returns at this release
    refused_without: str | None = None  # the slow vocabulary file this release needs and the folder lacks: it refuses

    @property
    def disagrees(self) -> bool:
        """The declared class builds a different pre-tokenizer than the file's, at this release."""
        return self.class_pre_tokenizer is not None and self.class_pre_tokenizer != self.file_pre_tokenizer

    @property
    def emulated(self) -> bool:
        """mldebug can build what this release builds (held to the real releases by the goldens)."""
        return self.disagrees and self.class_name == LLAMA and self.file_pre_tokenizer == BYTE_LEVEL

    @property
    def class_name(self) -> str:
        return (self.declared or "").removesuffix("Fast")


def declared_class(folder: Path) -> tuple[str | None, dict]:
    config = _json(folder / "tokenizer_config.json")
    declared = config.get("tokenizer_class")
    return (declared if isinstance(declared, str) else None), config


def file_pre_tokenizer(data: dict) -> str | None:
    """The kind of tokenizer.json's pre-tokenizer (a Sequence reads as its ByteLevel member, if any); a ByteLevel
    decoder alone also counts, as transformers' guard counts it; a normalizer that writes spaces as ``▁`` (older
    SentencePiece conversions: Llama 2, Phi-3) is Metaspace."""
    kinds = _kinds(data.get("pre_tokenizer"))
    if BYTE_LEVEL in kinds or BYTE_LEVEL in _kinds(data.get("decoder")):
        return BYTE_LEVEL
    if METASPACE in kinds or "▁" in json.dumps(data.get("normalizer"), ensure_ascii=False):
        return METASPACE
    return kinds[0] if kinds else None


def resolve(folder: str | Path, transformers_version: str | None) -> Resolution | None:
    """How ``transformers_version`` loads ``folder`` (None: no tokenizer.json or tokenizer_config.json there)."""
    folder = Path(folder)
    if not (folder / "tokenizer.json").is_file() or not (folder / "tokenizer_config.json").is_file():
        return None
    declared, config = declared_class(folder)
    if declared is not None and config.get("auto_map"):
        declared = None  # remote code decides; not modelled
    kind = _file_kind(folder / "tokenizer.json")
    resolution = _resolution(str(folder), declared, kind, transformers_version)
    missing = _refused_without(folder, config, resolution.class_name, transformers_version)
    return replace(resolution, refused_without=missing) if missing else resolution


def _refused_without(folder: Path, config: dict, class_name: str, version: str | None) -> str | None:
    """The slow vocabulary file ``version`` needs to load the folder and does not find (None: it loads)."""
    needs = versions.behaviour("transformers", "prefix_space_needs_slow", version)
    slow_file = needs.get(class_name) if isinstance(needs, dict) else None
    if isinstance(slow_file, str) and config.get("add_prefix_space") is not None and not (folder / slow_file).exists():
        return slow_file
    return None


REFUSAL = "ValueError: Cannot instantiate this tokenizer from a slow version"  # what 4.x raises (the goldens hold it)


def _resolution(folder: str, declared: str | None, kind: str | None, version: str | None) -> Resolution:
    name = (declared or "").removesuffix("Fast")
    recorded = versions.behaviour("transformers", "tokenizer_rebuilds", version)
    rebuilds = recorded if isinstance(recorded, dict) else {}
    own = rebuilds.get(name) if name and name not in FILE_AS_IS else None
    own = own if own in COMPARED and kind in COMPARED else None  # a class that rebuilds what the file has, or
    # a pair mldebug does not judge (BertPreTokenizer, Split...), reads as the file's
    guarded = name == LLAMA and kind == BYTE_LEVEL and bool(
        versions.behaviour("transformers", "byte_level_llama_guard", version))
    if guarded or own is None:
        return Resolution(folder, declared, kind, None, version, "TokenizersBackend" if guarded else
                          (declared or "TokenizersBackend"))
    return Resolution(folder, declared, kind, own, version, name)


def loads_right(resolution: Resolution, allowed: str | None = None) -> tuple[str, ...]:
    """The recorded transformers releases that load the folder's file as it is (within the specifier ``allowed``,
    e.g. a framework's pin, when given), oldest first."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    within = SpecifierSet(allowed or "")
    _, config = declared_class(Path(resolution.folder))
    out = []
    for release in record.releases("transformers"):
        again = _resolution(resolution.folder, resolution.declared, resolution.file_pre_tokenizer, release)
        refused = _refused_without(Path(resolution.folder), config, resolution.class_name, release)
        if not again.disagrees and not refused and Version(release) in within:
            out.append(release)
    return tuple(out)


def rebuilt_by(resolution: Resolution) -> tuple[str, ...]:
    """The recorded transformers releases whose declared class builds its own pipeline over the file's."""
    return tuple(release for release in record.releases("transformers") if _resolution(
        resolution.folder, resolution.declared, resolution.file_pre_tokenizer, release).disagrees)


def emulate(folder: str | Path, resolution: Resolution) -> Tokenizer | None:
    """The backend tokenizer ``resolution``'s release builds from ``folder`` (None: it loads the file as it is, or
    mldebug does not model what it builds)."""
    if not resolution.emulated:
        return None
    from tokenizers import Tokenizer

    folder = Path(folder)
    data = _json(folder / "tokenizer.json")
    _, config = declared_class(folder)
    model = data.get("model") or {}
    if model.get("type") != "BPE":
        return None
    prefix = config.get("add_prefix_space")
    prefix = True if prefix is None else bool(prefix)
    scheme = ("always" if config.get("legacy", False) else "first") if prefix else "never"
    decoders: list[dict] = [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                            {"type": "ByteFallback"}, {"type": "Fuse"}]
    if prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    data = {**data, "normalizer": None,
            "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": False},
            "decoder": {"type": "Sequence", "decoders": decoders},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                      "vocab": model.get("vocab", {}), "merges": model.get("merges", [])}}
    return Tokenizer.from_str(json.dumps(data))


def _kinds(part: object) -> list[str]:
    if not isinstance(part, dict):
        return []
    members = part.get("pretokenizers") or part.get("decoders")
    if part.get("type") == "Sequence" and isinstance(members, list):
        return [k for m in members for k in _kinds(m)]
    return [str(part.get("type"))] if part.get("type") else []


def _file_kind(path: Path) -> str | None:
    """file_pre_tokenizer of ``path``, parsed once per version of the file (a 150k-entry tokenizer.json takes
    seconds to parse, and probe and preflight ask for each config)."""
    try:
        stat = path.stat()
    except OSError:
        return file_pre_tokenizer({})
    return _file_kind_of(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _file_kind_of(path: str, mtime_ns: int, size: int) -> str | None:
    return file_pre_tokenizer(_json(Path(path)))


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def as_the_run_loads(loaded: LoadedTokenizer, transformers_version: str | None
                     ) -> tuple[Resolution | None, LoadedTokenizer]:
    """How ``transformers_version`` loads ``loaded``'s folder, and ``loaded`` with the backend that release builds
    when it differs and mldebug builds it too (the ids and labels shown are then the run's)."""
    import copy

    resolution = resolve(loaded.source, transformers_version)
    emulated = emulate(loaded.source, resolution) if resolution is not None else None
    if emulated is None:
        return resolution, loaded
    tokenizer = copy.copy(loaded.tokenizer)
    tokenizer._tokenizer = emulated  # the backend a TokenizersBackend encodes and decodes with
    return resolution, replace(loaded, tokenizer=tokenizer)


def round_trip(tokenizer: Tokenizer) -> Callable[[str], str]:
    """text -> the text ``tokenizer``'s ids stand for (encoded without special tokens, decoded)."""
    def trip(text: str) -> str:
        return tokenizer.decode(tokenizer.encode(text, add_special_tokens=False).ids, skip_special_tokens=False)
    return trip


@dataclass(frozen=True)
class RunTokenizer:
    """What the checks need to say how the run's transformers loads the tokenizer (Setup.run_tokenizer)."""

    resolution: Resolution
    target: str  # the transformers the run uses and why ("5.6.0 (assumed: the newest LLaMA-Factory 0.9.5 allows...)")
    pin: str | None  # the framework's transformers specifier, when it has one
    round_trip: Callable[[str], str] | None  # text -> what the run's ids stand for (None: not emulated)
    right_within_pin: tuple[str, ...]  # recorded releases inside the pin that load the file as it is
    right: tuple[str, ...]  # all recorded releases that do

    def fix(self) -> str:
        """The versions that load it right, then the file change that makes every release load it right."""
        inside = self.right_within_pin
        where = (f"run transformers {inside[-1]} (inside {self.pin}, loads tokenizer.json as it is)" if inside else
                 f"transformers {span(self.right)} load it right" + (f" (none inside {self.pin})" if self.pin else ""))
        return f"{where}, or set \"tokenizer_class\": \"PreTrainedTokenizerFast\" in tokenizer_config.json"


def span(releases: tuple[str, ...]) -> str:
    """"<= 4.57.6 and >= 5.22.0" from the recorded releases that load it right."""
    every = record.releases("transformers")
    runs: list[list[str]] = []
    for release in every:
        if release in releases:
            if runs and every.index(release) - 1 == every.index(runs[-1][-1]):
                runs[-1].append(release)
            else:
                runs.append([release])
    parts = [f"<= {r[-1]}" if r[0] == every[0] else f">= {r[0]}" if r[-1] == every[-1] else f"{r[0]}-{r[-1]}"
             for r in runs]
    return " and ".join(parts) or "none recorded"


def run_tokenizer(loaded: LoadedTokenizer, target: versions.TargetVersion, framework: str
                  ) -> tuple[RunTokenizer | None, LoadedTokenizer]:
    """The tokenizer as the run's transformers (``target``) builds it, and what the checks say of it."""
    resolution, run_loaded = as_the_run_loads(loaded, target.version)
    if resolution is None or not (resolution.refused_without or _ever_disagrees(resolution)):
        return None, loaded
    found = versions.framework_pin(framework, versions.installed(framework))
    pin = found[1] if found else None
    backend = run_loaded.tokenizer.backend_tokenizer if run_loaded is not loaded else None
    if backend is None and resolution.disagrees and builds_alike(resolution, versions.installed("transformers")):
        backend = loaded.tokenizer.backend_tokenizer  # the installed release rebuilds it as the run's does
    return RunTokenizer(resolution, target.describe().removeprefix("transformers "), pin,
                        round_trip(backend) if backend is not None else None,
                        loads_right(resolution, pin), loads_right(resolution)), run_loaded


def builds_alike(resolution: Resolution, installed: str | None) -> bool:
    """The installed transformers builds the same class with the same pipeline as ``resolution``'s release (both
    rebuild it from the class's defaults): the tokenizer mldebug loaded is then the one the run trains with, e.g.
    ``Qwen2Tokenizer`` declared over a Metaspace file, rebuilt ByteLevel by every 5.x release."""
    if installed is None:
        return False
    here = _resolution(resolution.folder, resolution.declared, resolution.file_pre_tokenizer, installed)
    return (here.loaded_as, here.class_pre_tokenizer) == (resolution.loaded_as, resolution.class_pre_tokenizer)


def _ever_disagrees(resolution: Resolution) -> bool:
    return len(loads_right(resolution)) < len(record.releases("transformers"))
