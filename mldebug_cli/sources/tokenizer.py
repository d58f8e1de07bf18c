"""Loading a tokenizer (local folder or hub cache) and its chat template, never with remote code."""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import SETTING_CHAT_TEMPLATE, InputError, in_one_line
from mldebug_cli.core.safe_io import note_inputs, read_text, require_regular, stays_inside
from mldebug_cli.sources.hub import online, require_local_or_cached, snapshot_folders, stay_offline

TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tekken.json", "spiece.model")


@dataclass(frozen=True)
class LoadedTokenizer:
    tokenizer: Any  # a transformers PreTrainedTokenizerBase
    source: str
    chat_template: str | None
    template_source: str | None  # where the template came from
    generation_eos_ids: tuple[int, ...]  # eos ids from generation_config.json, when present

    @property
    def name(self) -> str:
        return self.source


def load_tokenizer(
    spec: str, chat_template: str | None = None, trust_remote_code: bool = False
) -> LoadedTokenizer:
    """Load ``spec`` (a folder or a cached hub id) with AutoTokenizer; ``chat_template`` is a file overriding the template."""
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise InputError(f"{spec}: --tokenizer takes a folder (with tokenizer.json), not a file")
    if path.is_dir() and not any((path / name).exists() for name in TOKENIZER_FILES):
        raise InputError(
            f"{spec}: no tokenizer in this folder (none of {', '.join(TOKENIZER_FILES)})",
            hint="point --tokenizer at the folder that holds tokenizer.json and tokenizer_config.json",
        )
    require_local_or_cached(spec, "tokenizer")
    for folder in [path] if path.is_dir() else snapshot_folders(spec):  # a hub id: its cached files, the same way
        _require_regular_files(folder)
    if path.is_dir() and not trust_remote_code:
        _refuse_remote_code(path)
    tokenizer = _auto_tokenizer(spec, trust_remote_code)
    template, template_source = _template(tokenizer, spec, chat_template)
    return LoadedTokenizer(tokenizer, spec, template, template_source, _generation_eos_ids(path))


# What transformers reads from a tokenizer folder; one that is there but not a regular file (a FIFO, /dev/zero, a
# dangling link) is an error before transformers sees the folder: it would block, eat memory, or be skipped
# silently (a tokenizer.json skipped gives a tokenizer with no vocabulary, and every check passes on it).
READ_BY_TRANSFORMERS = (
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json", "vocab.json",
    "vocab.txt", "merges.txt", "tokenizer.model", "spiece.model", "tekken.json", "chat_template.jinja",
    "chat_template.json", "config.json", "generation_config.json",
)


def _require_regular_files(folder: Path) -> None:
    from mldebug_cli.sources.hub import hub_cache

    for name in READ_BY_TRANSFORMERS:
        path = folder / name
        if not (path.exists() or path.is_symlink()):
            continue
        try:
            require_regular(path)
        except FileNotFoundError:
            raise InputError(f"{path}: a symlink to a file that does not exist") from None
        stays_inside(folder, path, also=[hub_cache()])  # a hub snapshot's files link into the cache's blobs
    templates = folder / "additional_chat_templates"
    if templates.is_dir():
        stays_inside(folder, templates, also=[hub_cache()])
        for path in sorted(templates.iterdir())[:1000]:
            require_regular(path)
            stays_inside(folder, path, also=[hub_cache()])
    note_inputs([folder])


def _refuse_remote_code(path: Path) -> None:
    """A tokenizer whose class lives in the repo's own Python files needs remote code: say so instead of running it."""
    config = _read_json(path / "tokenizer_config.json")
    auto_map = config.get("auto_map") if isinstance(config, dict) else None
    needs_code = bool(auto_map) and not (path / "tokenizer.json").exists()
    if needs_code:
        raise InputError(
            f"{path}: tokenizer_config.json asks for remote code (auto_map) and there is no tokenizer.json",
            hint="mldebug never runs code from a model folder unless you pass --trust-remote-code",
        )


_TORCH_FREE = False  # set once at process start by keep_torch_out()


def keep_torch_out() -> None:
    """Declare, at the start of a process that never needs torch (no LR schedule), that tokenizers load without it.

    Tokenizers never use torch, but AutoTokenizer imports it (1.5-2 s) through transformers' config classes.
    """
    global _TORCH_FREE
    _TORCH_FREE = True


@contextmanager
def torch_hidden_from_transformers() -> Iterator[None]:
    """Around transformers' first import: it asks once per process whether torch exists (``find_spec``), and a
    ``None`` entry in ``sys.modules`` makes the answer no. The entry goes again afterwards, so code that tests
    ``"torch" in sys.modules`` (datasets does) sees no torch rather than a blocked one."""
    if not _TORCH_FREE or "torch" in sys.modules or "transformers" in sys.modules:
        yield
        return
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # its "PyTorch was not found" advice
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]


@functools.lru_cache(maxsize=8)
def _auto_tokenizer(spec: str, trust_remote_code: bool):
    """Load once per run; callers must not mutate the tokenizer (the template is kept beside it)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")  # "PyTorch was not found": tokenizers need none
    stay_offline()
    try:
        with torch_hidden_from_transformers():
            from transformers import AutoTokenizer
            from transformers.utils import logging as hf_logging

            hf_logging.set_verbosity_error()
            logging.getLogger("transformers").setLevel(logging.ERROR)
            tokenizer = AutoTokenizer.from_pretrained(
                spec, trust_remote_code=trust_remote_code, local_files_only=not online()
            )
    except OSError as exc:
        raise InputError(f"{spec}: cannot load a tokenizer: {in_one_line(exc, 300)}",
                         hint="pass a local folder, or a hub id that is in the local cache (or --online)") from None
    except Exception as exc:  # transformers raises ValueError/KeyError/... for broken folders
        raise InputError(f"{spec}: cannot load a tokenizer: {type(exc).__name__}: {in_one_line(exc, 300)}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(
            f"{spec}: only a slow (Python) tokenizer could be loaded; mldebug needs a fast tokenizer (tokenizer.json)",
            hint="save the tokenizer with transformers to produce tokenizer.json",
        )
    return tokenizer


def _template(tokenizer, spec: str, override: str | None) -> tuple[str | None, str | None]:
    if override is not None:
        path = Path(override)
        try:
            text = read_text(path)
        except FileNotFoundError:
            raise InputError(f"{override}: no such chat template file", setting=SETTING_CHAT_TEMPLATE) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{override}: cannot read the chat template: {in_one_line(exc, 300)}",
                             setting=SETTING_CHAT_TEMPLATE) from None
        return text, override
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: the trainer uses "default"
        template = template.get("default") or next(iter(template.values()), None)
    return template, (f"{spec} (tokenizer)" if template else None)


def _generation_eos_ids(folder: Path) -> tuple[int, ...]:
    config = _read_json(folder / "generation_config.json")
    eos = config.get("eos_token_id") if isinstance(config, dict) else None
    if isinstance(eos, int):
        return (eos,)
    if isinstance(eos, list):
        return tuple(i for i in eos if isinstance(i, int))
    return ()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not readable JSON: {in_one_line(exc, 300)}") from None


def special_texts(tok) -> list[str]:
    """Texts the tokenizer maps to special ids (the added tokens marked special, and the named special tokens)."""
    texts = {t.content for t in tok.added_tokens_decoder.values() if t.special}
    texts.update(t for t in tok.all_special_tokens if t)
    return sorted(t for t in texts if t.strip())


def single_id(tok, text: str) -> int | None:
    """The id of ``text`` when the tokenizer encodes it as one token."""
    ids = tok.encode(text, add_special_tokens=False)
    return ids[0] if len(ids) == 1 else None


def token_pieces(tokenizer: Any, ids: Sequence[int]) -> list[str]:
    """Each id's piece; an id the tokenizer does not have (a pre-tokenized row's id past the vocabulary) is shown as
    ``<id N: not in the vocabulary>`` instead of transformers' None."""
    pieces = tokenizer.convert_ids_to_tokens(list(ids)) if ids else []
    return [p if isinstance(p, str) else f"<id {i}: not in the vocabulary>" for i, p in zip(ids, pieces)]
