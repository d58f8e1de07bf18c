"""What a TRAIN or DEPLOY spec is (tokenizer folder, ``.jinja``, GGUF, Modelfile), the ``Side`` an engine builds from
it, and the readers every engine shares. Which engines serve a kind, and how each builds its side, renders and stops,
is each engine's own knowledge (``mldebug_cli.engines``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.core.safe_io import read_text as safe_read_text
from mldebug_cli.sources.gguf_file import GGUFVocab, read_gguf_vocab
from mldebug_cli.sources.tokenizer import LoadedTokenizer

JINJA_SUFFIXES = (".jinja", ".jinja2", ".j2")
GO_TEMPLATE_SUFFIXES = (".gotmpl", ".tmpl")


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a template, the engine that renders it, and its tokenization rules."""

    role: str  # "train" or "deploy"
    spec: str  # the path as the user gave it
    kind: str  # tokenizer, jinja, gguf, modelfile, gotemplate
    engine: str  # the engine's registry name (mldebug_cli.engines.registry)
    template: str | None  # the Jinja or Go template the engine renders; None: llama.cpp's ChatML fallback
    template_source: str
    bos_text: str | None  # what templates see as bos_token
    eos_text: str | None
    special_tokens: Mapping[str, Any]  # template variables transformers passes (the special tokens map)
    adds_bos: bool  # the runtime prepends the BOS id when it tokenizes the rendered prompt
    adds_eos: bool
    stop_token_texts: tuple[str, ...]  # texts of the tokens that end generation
    stop_strings: tuple[str, ...] = ()  # text stop sequences (Ollama PARAMETER stop)
    fallback: str | None = None  # why the runtime does not use the trained template at all
    system: str | None = None  # Modelfile SYSTEM
    modelfile_messages: tuple[Mapping[str, str], ...] = ()
    notes: tuple[str, ...] = ()  # assumptions the comparison rests on
    loaded: LoadedTokenizer | None = field(default=None, repr=False, compare=False)
    gguf: GGUFVocab | None = field(default=None, repr=False, compare=False)
    syntax: str = "jinja"  # the template language the engine renders: jinja or go
    renders_without_generation_prompt: bool = True  # False: the engine's chat route always ends the prompt for a reply
    processor_class: str | None = None  # a model folder's processor (image conversations); None: a text model
    interleave_images: bool = False  # the engine puts each image's marker where its part is (vLLM --interleave-mm-strings)

    @functools.cached_property
    def _gguf_ids(self) -> dict[str, int]:
        """Token text -> id in the GGUF (a repeated text keeps its last id, as llama.cpp's token_to_id does)."""
        return {text: i for i, text in enumerate(self.gguf.tokens)} if self.gguf is not None else {}

    def token_id(self, text: str) -> int | None:
        """The id of ``text`` in this side's own vocabulary (the GGUF's, else the tokenizer's)."""
        if self.gguf is not None:
            return self._gguf_ids.get(text)
        if self.loaded is not None:
            tokenizer = self.loaded.tokenizer
            found = tokenizer.convert_tokens_to_ids(text)
            if not isinstance(found, int):
                return None
            # an unknown text resolves to the unk id; the unk token itself does too, and is in the vocabulary
            return None if found == tokenizer.unk_token_id and text != tokenizer.unk_token else found
        return None


# ------------------------------------------------------------------------------------ spec -> kind


def deploy_kind(spec: str) -> str:
    """What a DEPLOY path is: tokenizer (folder), gguf, jinja or modelfile."""
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{spec}: no such file or folder")
    if path.is_dir():
        return "tokenizer"
    suffix = path.suffix.lower()
    if suffix == ".gguf":
        return "gguf"
    if suffix in JINJA_SUFFIXES:
        return "jinja"
    if "modelfile" in path.name.lower() or _starts_with_from(path):
        return "modelfile"
    raise InputError(
        f"{spec}: cannot tell what this deploy file is",
        hint="--deploy takes a .gguf, an Ollama Modelfile, a .jinja template or a tokenizer folder",
    )


def render_kind(template: str | None, gguf: str | None, modelfile: str | None) -> str:
    """What the source of ``mldebug render`` is: gguf, modelfile, jinja, gotemplate or tokenizer."""
    if gguf:
        return "gguf"
    if modelfile:
        return "modelfile"
    if template:
        return "jinja" if is_jinja(template) else "gotemplate"
    return "tokenizer"


def is_jinja(template: str | None) -> bool:
    return template is not None and not template.lower().endswith(GO_TEMPLATE_SUFFIXES)


# ------------------------------------------------------------------------------------------ shared


def hf_as_gguf_vocab(loaded: LoadedTokenizer) -> GGUFVocab:
    """The vocabulary llama.cpp would see after converting this tokenizer (ids, texts, add_bos/add_eos)."""
    tok = loaded.tokenizer
    tokens = tuple(tok.convert_ids_to_tokens(list(range(len(tok)))))
    return GGUFVocab(
        path=loaded.source,
        name=None,
        architecture=None,
        tokenizer_model=None,
        tokenizer_pre=None,
        chat_template=loaded.chat_template,
        named_chat_templates={},
        tokens=tokens,
        token_types=(),
        bos_id=tok.bos_token_id,
        eos_id=tok.eos_token_id,
        eot_id=None,
        eom_id=None,
        pad_id=tok.pad_token_id,
        unk_id=tok.unk_token_id,
        add_bos_token=tokenizer_adds_bos(tok),
        add_eos_token=tokenizer_adds_eos(tok),
    )


def tokenizer_adds_bos(tok: Any) -> bool:
    ids = tok("a").input_ids
    return tok.bos_token_id is not None and bool(ids) and ids[0] == tok.bos_token_id


def tokenizer_adds_eos(tok: Any) -> bool:
    ids = tok("a").input_ids
    return tok.eos_token_id is not None and bool(ids) and ids[-1] == tok.eos_token_id


def hf_stop_texts(loaded: LoadedTokenizer) -> tuple[str, ...]:
    tok = loaded.tokenizer
    ids = (tok.eos_token_id, *loaded.generation_eos_ids)
    return tuple(dict.fromkeys(tok.convert_ids_to_tokens(i) for i in ids if i is not None))


def read_gguf(path: str | Path) -> GGUFVocab:
    """read_gguf_vocab, once per file version in this process (a GGUF and a Modelfile FROM it read once)."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _GGUF_CACHE:
        _GGUF_CACHE[key] = read_gguf_vocab(path)
    return _GGUF_CACHE[key]


_GGUF_CACHE: dict[tuple[str, int, int], GGUFVocab] = {}


def read_text(spec: str) -> str:
    try:
        return safe_read_text(spec)
    except FileNotFoundError:
        raise InputError(f"{spec}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{spec}: cannot read it: {exc}") from None


def _starts_with_from(path: Path) -> bool:
    try:
        head = safe_read_text(path, errors="replace")[:4096]
    except OSError:
        return False
    lines = (line.strip() for line in head.splitlines())
    first = next((line for line in lines if line and not line.startswith("#")), "")
    return first.upper().startswith("FROM ")


def check_jinja_syntax(source: str, name: str) -> None:
    """Raise ``InputError("<name>:<line>: ...")`` when the Jinja template does not parse."""
    error = _jinja_syntax_error(source)
    if error is not None:
        line, message = error
        raise InputError(f"{name}:{line}: the chat template does not parse: {message}",
                         hint="fix the template; every engine refuses a template it cannot parse")  # fmt: skip


def jinja_parses(source: str) -> bool:
    return _jinja_syntax_error(source) is None


def _jinja_syntax_error(source: str) -> tuple[int, str] | None:
    import jinja2
    from jinja2.ext import Extension

    from mldebug_cli.sources.template_bounds import bounded_parse

    class GenerationTags(Extension):
        tags = {"generation"}  # noqa: RUF012 - jinja2 reads the class attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body, lineno=lineno)

    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols", GenerationTags])
    try:
        bounded_parse(env.parse, source)
    except jinja2.TemplateSyntaxError as exc:
        return exc.lineno, exc.message or "syntax error"
    return None
