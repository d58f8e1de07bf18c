"""Resolve a TRAIN or DEPLOY spec into a side: the template an engine renders and how it tokenizes and stops.

A side answers, for one runtime: which template text is rendered (Jinja or Ollama's Go template), which
BOS/EOS texts the template sees, whether the runtime prepends BOS / appends EOS ids when it tokenizes the
prompt, which tokens and strings end generation, and whether the runtime would use the trained template
at all. The runtime rules, each from the runtime's own source:

- transformers / vLLM / TGI chat: the prompt is tokenized without special tokens (transformers
  ``apply_chat_template``; vLLM ``ChatCompletionRequest.add_special_tokens=False``; TGI's chat route builds
  its ``GenerateRequest`` with ``add_special_tokens: false``); generation stops on the tokenizer's EOS and
  the ``eos_token_id`` of ``generation_config.json``.
- llama.cpp: BOS/EOS ids are added per the vocab's add_bos/add_eos flags (``common_tokenize`` with
  ``add_special``), special-token text is parsed, generation stops on every end-of-generation token
  (``llama_vocab_is_eog``). A GGUF without a template renders as ChatML.
- Ollama: the same BOS/EOS flags; stop strings from ``PARAMETER stop`` (or, for a GGUF imported without
  TEMPLATE, from the detected family); token stops depend on the runner: architectures in
  ``OllamaEngineRequired`` (fs/ggml/ggml.go) run on Ollama's engine, which stops on ``eos_token_id`` plus
  ``eos_token_ids`` only; the rest run on llama.cpp, which stops on every end-of-generation token.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.safe_io import read_text as safe_read_text
from mldebug_cli.sources.gguf_file import GGUFVocab, read_gguf_vocab
from mldebug_cli.sources.tokenizer import LoadedTokenizer, load_tokenizer

ENGINES = ("transformers", "vllm", "llamacpp", "ollama", "tgi")
JINJA_SUFFIXES = (".jinja", ".jinja2", ".j2")
GO_TEMPLATE_SUFFIXES = (".gotmpl", ".tmpl")
# Engines each kind of DEPLOY can be served with; the first is the default.
_ENGINES_FOR_KIND = {
    "tokenizer": ("vllm", "transformers", "tgi", "llamacpp"),
    "jinja": ("vllm", "transformers", "tgi", "llamacpp"),
    "gguf": ("llamacpp", "ollama"),
    "modelfile": ("ollama",),
}
_RENDER_ENGINES_FOR_KIND = {
    "tokenizer": ("transformers", "llamacpp", "tgi"),
    "jinja": ("transformers", "llamacpp", "tgi"),
    "gotemplate": ("ollama",),
    "gguf": ("llamacpp", "ollama", "transformers", "tgi"),
    "modelfile": ("ollama",),
}
# Ollama's OllamaEngineRequired() (fs/ggml/ggml.go): these architectures run on Ollama's own engine.
OLLAMA_ENGINE_ARCHITECTURES = frozenset({
    "bert", "deepseek2", "deepseekocr", "gemma3", "gemma3n", "gemma4", "gptoss", "gpt-oss", "laguna", "llama4",
    "mistral3", "mllama", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni", "nomic-bert", "olmo3", "qwen25vl",
    "qwen3", "qwen3moe", "qwen35", "qwen35moe", "qwen3next", "qwen3vl", "qwen3vlmoe", "glm4moelite", "glmocr",
    "lfm2", "lfm2moe",
})  # fmt: skip


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a template, the engine that renders it, and its tokenization rules."""

    role: str  # "train" or "deploy"
    spec: str  # the path as the user gave it
    kind: str  # tokenizer, jinja, gguf, modelfile, gotemplate
    engine: str
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

    @property
    def syntax(self) -> str:
        return "go" if self.engine == "ollama" else "jinja"

    @property
    def renders_without_generation_prompt(self) -> bool:
        """Ollama and TGI have no switch for it: their chat routes always end the prompt for a reply."""
        return self.engine not in ("ollama", "tgi")

    @functools.cached_property
    def _gguf_ids(self) -> dict[str, int]:
        """Token text -> id in the GGUF (a repeated text keeps its last id, as llama.cpp's token_to_id does)."""
        return {text: i for i, text in enumerate(self.gguf.tokens)} if self.gguf is not None else {}

    def token_id(self, text: str) -> int | None:
        """The id of ``text`` in this side's own vocabulary (the GGUF's, else the tokenizer's)."""
        if self.gguf is not None:
            return self._gguf_ids.get(text)
        if self.loaded is not None:
            found = self.loaded.tokenizer.convert_tokens_to_ids(text)
            return found if isinstance(found, int) and found != self.loaded.tokenizer.unk_token_id else None
        return None


# ----------------------------------------------------------------------------------------- TRAIN


def train_side(spec: str, train_tokenizer: str | None = None, trust_remote_code: bool = False) -> Side:
    """TRAIN: a tokenizer folder (its own template), or a ``.jinja`` with ``--train-tokenizer DIR``."""
    path = Path(spec)
    if not path.exists():
        raise InputError(f"{spec}: no such file or folder", hint="--train takes a tokenizer folder or a .jinja file")
    if path.is_dir():
        loaded = load_tokenizer(spec, None, trust_remote_code)
    elif path.suffix.lower() in JINJA_SUFFIXES:
        if train_tokenizer is None:
            raise UsageError(f"--train {spec} is a template: pass --train-tokenizer DIR for its tokenizer")
        loaded = load_tokenizer(train_tokenizer, spec, trust_remote_code)
    else:
        raise InputError(f"{spec}: --train takes a tokenizer folder or a .jinja chat template")
    if not loaded.chat_template:
        raise InputError(f"{spec}: the tokenizer has no chat template", hint="pass --train FILE.jinja --train-tokenizer DIR")
    check_jinja_syntax(loaded.chat_template, loaded.template_source or spec)
    tok = loaded.tokenizer
    return Side(
        role="train",
        spec=spec,
        kind="tokenizer" if path.is_dir() else "jinja",
        engine="transformers",
        template=loaded.chat_template,
        template_source=loaded.template_source or spec,
        bos_text=tok.bos_token,
        eos_text=tok.eos_token,
        special_tokens=dict(tok.special_tokens_map),
        adds_bos=False,  # apply_chat_template (and TRL on conversations) tokenizes without special tokens
        adds_eos=False,
        stop_token_texts=_hf_stop_texts(loaded),
        loaded=loaded,
    )


# ---------------------------------------------------------------------------------------- DEPLOY


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


def deploy_side(spec: str, engine: str | None, train: Side, trust_remote_code: bool = False) -> Side:
    """DEPLOY resolved for ``engine`` (default: llamacpp for a GGUF, ollama for a Modelfile, else vllm)."""
    kind = deploy_kind(spec)
    engine = choose_engine(kind, engine, "--deploy-engine")
    if kind == "gguf":
        vocab = _read_gguf(spec)
        if engine == "ollama":
            return _ollama_side(spec, "gguf", vocab, None, train.loaded)
        return _llamacpp_gguf_side(spec, vocab, "deploy")
    if kind == "modelfile":
        return _modelfile_side(spec, train.loaded)
    if kind == "tokenizer":
        loaded = load_tokenizer(spec, None, trust_remote_code)
        if not loaded.chat_template:
            raise InputError(f"{spec}: the tokenizer has no chat template", hint="vLLM needs --chat-template FILE then")
        return _hf_side(spec, "tokenizer", engine, loaded.chat_template, loaded.template_source or spec, loaded, "deploy")
    template = read_text(spec)
    check_jinja_syntax(template, spec)
    return _hf_side(spec, "jinja", engine, template, spec, train.loaded, "deploy")


def render_source_side(
    *,
    tokenizer: str | None,
    template: str | None,
    gguf: str | None,
    modelfile: str | None,
    engine: str | None,
    trust_remote_code: bool = False,
) -> Side:
    """The source of ``mldebug render``: one of --template, --gguf, --modelfile, or --tokenizer alone.

    ``--tokenizer`` may join any of them: it gives a template's special tokens and the prompt's input ids.
    """
    given = [flag for flag, value in (("--template", template), ("--gguf", gguf), ("--modelfile", modelfile)) if value]
    if len(given) > 1 or not (given or tokenizer):
        raise UsageError("give one of --tokenizer DIR, --template FILE, --gguf FILE or --modelfile FILE",
                         hint="--tokenizer may join --template, --gguf or --modelfile to give input ids")  # fmt: skip
    kind = _render_kind(template, gguf, modelfile)
    chosen = choose_engine(kind, engine, "--engine", _RENDER_ENGINES_FOR_KIND)  # before anything loads
    loaded = load_tokenizer(tokenizer, template if _is_jinja(template) else None, trust_remote_code) if tokenizer else None
    if gguf:
        return _render_gguf_side(gguf, chosen, loaded)
    if modelfile:
        return _modelfile_side(modelfile, loaded, role="render")
    if kind == "gotemplate":
        source = read_text(template)
        _check_go_template(source, template)
        return _ollama_side(template, "gotemplate", None, None, loaded, role="render", template=(source, template))
    if loaded is not None:
        if not loaded.chat_template:
            raise InputError(f"{tokenizer}: the tokenizer has no chat template", hint="pass --template FILE")
        check_jinja_syntax(loaded.chat_template, loaded.template_source or tokenizer)
        return _hf_side(template or tokenizer, kind, chosen, loaded.chat_template, loaded.template_source or tokenizer,
                        loaded, "render")  # fmt: skip
    source = read_text(template)
    check_jinja_syntax(source, template)
    return Side(role="render", spec=template, kind="jinja", engine=chosen, template=source, template_source=template,
                bos_text=None, eos_text=None, special_tokens={}, adds_bos=False, adds_eos=False,
                stop_token_texts=())  # fmt: skip


def _render_kind(template: str | None, gguf: str | None, modelfile: str | None) -> str:
    if gguf:
        return "gguf"
    if modelfile:
        return "modelfile"
    if template:
        return "jinja" if _is_jinja(template) else "gotemplate"
    return "tokenizer"


def _render_gguf_side(spec: str, engine: str, loaded: LoadedTokenizer | None) -> Side:
    vocab = _read_gguf(spec)
    if engine == "llamacpp":
        return replace(_llamacpp_gguf_side(spec, vocab, "render"), loaded=loaded)
    if engine == "ollama":
        return _ollama_side(spec, "gguf", vocab, None, loaded, role="render")
    if not vocab.chat_template:
        raise InputError(f"{spec}: the GGUF has no chat template", hint="--engine llamacpp renders llama.cpp's ChatML fallback")
    check_jinja_syntax(vocab.chat_template, f"{spec} (tokenizer.chat_template)")
    return Side(role="render", spec=spec, kind="gguf", engine=engine, template=vocab.chat_template,
                template_source=f"{spec} (tokenizer.chat_template)", bos_text=vocab.bos_text, eos_text=vocab.eos_text,
                special_tokens={"bos_token": vocab.bos_text, "eos_token": vocab.eos_text}, adds_bos=False,
                adds_eos=False, stop_token_texts=(), loaded=loaded, gguf=vocab)  # fmt: skip


def _is_jinja(template: str | None) -> bool:
    return template is not None and not template.lower().endswith(GO_TEMPLATE_SUFFIXES)


def choose_engine(kind: str, engine: str | None, flag: str, table: Mapping[str, tuple[str, ...]] | None = None) -> str:
    """The engine for a kind of source: the first allowed one by default, else ``engine`` if it can serve it."""
    table = table or _ENGINES_FOR_KIND
    allowed = table[kind]
    if engine is None:
        return allowed[0]
    known = [e for e in ENGINES if any(e in engines for engines in table.values())]
    if engine not in known:
        raise UsageError(f"{flag}: unknown engine {engine!r}", hint=f"one of {', '.join(known)}")
    if engine not in allowed:
        raise UsageError(f"{flag} {engine} cannot serve a {kind}", hint=f"for a {kind}: {', '.join(allowed)}")
    return engine


def _hf_side(
    spec: str, kind: str, engine: str, template: str, source: str, loaded: LoadedTokenizer | None, role: str
) -> Side:
    """A Jinja template served with a Hugging Face tokenizer (vLLM, TGI, transformers, or llama.cpp after conversion)."""
    if loaded is None:
        raise UsageError(f"{spec}: a template alone has no tokenizer; pass one")
    tok = loaded.tokenizer
    notes: tuple[str, ...] = ()
    adds_bos = adds_eos = False
    stops = _hf_stop_texts(loaded)
    if engine == "llamacpp":
        vocab = hf_as_gguf_vocab(loaded)
        adds_bos, adds_eos = vocab.add_bos, vocab.add_eos
        stops = tuple(vocab.tokens[i] for i in vocab.end_of_generation_ids)
        notes = ("llama.cpp vocab flags assumed from the tokenizer (as convert_hf_to_gguf writes them)",)
    return Side(
        role=role,
        spec=spec,
        kind=kind,
        engine=engine,
        template=template,
        template_source=source,
        bos_text=tok.bos_token,
        eos_text=tok.eos_token,
        special_tokens=dict(tok.special_tokens_map),
        adds_bos=adds_bos,
        adds_eos=adds_eos,
        stop_token_texts=stops,
        notes=notes,
        loaded=loaded,
    )


def _llamacpp_gguf_side(spec: str, vocab: GGUFVocab, role: str) -> Side:
    fallback = None
    if not vocab.chat_template:
        fallback = "the GGUF has no tokenizer.chat_template, so llama.cpp renders ChatML"
    elif not jinja_parses(vocab.chat_template):
        fallback = "the GGUF's template does not parse: llama.cpp refuses to load it (older builds fell back to ChatML)"
    return Side(
        role=role,
        spec=spec,
        kind="gguf",
        engine="llamacpp",
        template=vocab.chat_template if fallback is None else None,
        template_source=f"{spec} (tokenizer.chat_template)" if fallback is None else "llama.cpp's ChatML fallback",
        bos_text=vocab.bos_text,
        eos_text=vocab.eos_text,
        special_tokens={"bos_token": vocab.bos_text, "eos_token": vocab.eos_text},
        adds_bos=vocab.add_bos,
        adds_eos=vocab.add_eos,
        stop_token_texts=tuple(vocab.tokens[i] for i in vocab.end_of_generation_ids),
        fallback=fallback,
        gguf=vocab,
    )


def _modelfile_side(spec: str, assumed: LoadedTokenizer | None, role: str = "deploy") -> Side:
    from mldebug_cli.sources.modelfile import read_modelfile

    modelfile = read_modelfile(Path(spec))
    if modelfile.renderer:
        raise InputError(
            f"{spec}: RENDERER {modelfile.renderer}: Ollama renders with a built-in renderer, which mldebug cannot emulate",
            hint="remove RENDERER to compare the TEMPLATE, or compare against the model's GGUF",
        )
    target = modelfile.from_path
    vocab: GGUFVocab | None = None
    loaded: LoadedTokenizer | None = None
    if target is not None and target.is_dir():
        loaded = load_tokenizer(str(target))
    elif target is not None and target.suffix.lower() == ".gguf":
        vocab = _read_gguf(target)
    elif target is not None:
        raise InputError(f"{spec}: FROM {modelfile.from_}: mldebug reads a GGUF file or a model folder, not {target.suffix}")
    else:
        modelfile, vocab = _from_ollama_store(modelfile)
    return _ollama_side(spec, "modelfile", vocab, modelfile, assumed, loaded, role)


def _from_ollama_store(modelfile: Any) -> tuple[Any, GGUFVocab | None]:
    """FROM names a model: what the local Ollama store holds for it (its GGUF, and the TEMPLATE, SYSTEM and
    stop words it was created with, which this Modelfile's own lines override, as ``ollama create`` does)."""
    from mldebug_cli.sources import ollama_store

    stored = ollama_store.find(modelfile.from_)
    if stored is None:
        return modelfile, None
    parameters = modelfile.parameters
    if not modelfile.stop:
        parameters = parameters + tuple(("stop", s) for s in stored.stop)
    inherited = replace(modelfile, template=modelfile.template if modelfile.template is not None else stored.template,
                        system=modelfile.system if modelfile.system is not None else stored.system,
                        parameters=parameters)  # fmt: skip
    return inherited, _read_gguf(stored.gguf) if stored.gguf is not None else None


def _ollama_side(
    spec: str,
    kind: str,
    vocab: GGUFVocab | None,
    modelfile: Any,
    assumed: LoadedTokenizer | None,
    loaded: LoadedTokenizer | None = None,
    role: str = "deploy",
    template: tuple[str, str] | None = None,
) -> Side:
    """Ollama serving a GGUF (``FROM x.gguf``), a model folder, or a named model, as ``ollama create`` sets it up.

    ``assumed`` is the tokenizer whose vocabulary stands in when FROM names a model in Ollama's store;
    ``template`` (text, where from) is a Go template given directly.
    """
    from mldebug_cli.render import ollama

    notes: list[str] = []
    stop_strings = tuple(modelfile.stop) if modelfile is not None else ()
    fallback = None
    if template is not None:
        template, source = template
    elif modelfile is not None and modelfile.template is not None:
        template, source = modelfile.template, f"{spec} (TEMPLATE)"
        _check_go_template(template, spec)
    else:
        hf_template = _imported_template(vocab, loaded)
        if vocab is None and loaded is None:
            raise InputError(
                f"{spec}: FROM {modelfile.from_} names a model that is not in the local Ollama store and there is no TEMPLATE",
                hint="add the TEMPLATE (`ollama show --modelfile NAME` prints it), point FROM at the GGUF, or set "
                "OLLAMA_MODELS to the store that holds the model",
            )
        families = ollama.families_dir() if hf_template else None
        if hf_template and families is None:
            raise InputError(
                f"{spec}: no TEMPLATE, so Ollama would pick one of its built-in templates by matching the model's "
                "chat template, and mldebug does not ship Ollama's templates",
                hint="pass the Modelfile `ollama show --modelfile NAME` prints after `ollama create` (it carries the "
                f"TEMPLATE Ollama chose), or set {ollama.FAMILIES_ENV} to the template/ folder of an Ollama source tree",
            )
        family = ollama.detect_family(hf_template, families) if families is not None else None
        if family is None:
            template = ollama.DEFAULT_TEMPLATE
            source = "Ollama's raw-prompt default ({{ .Prompt }})"
            fallback = ("the model's chat template matches none of Ollama's template families"
                        if hf_template else "the model has no chat template") + ", so Ollama sends the raw prompt"
        else:
            loaded_family = ollama.load_family(family, families)
            template, source = loaded_family.template, f"Ollama's {family} template (detected on import)"
            stop_strings = stop_strings or loaded_family.stop  # a Modelfile PARAMETER stop replaces the family's
    facts = _ollama_vocab_facts(vocab, loaded, assumed)
    notes.extend(facts.notes)
    return Side(
        role=role,
        spec=spec,
        kind=kind,
        engine="ollama",
        template=template,
        template_source=source,
        bos_text=facts.bos_text,
        eos_text=facts.eos_text,
        special_tokens={},
        adds_bos=facts.adds_bos,
        adds_eos=facts.adds_eos,
        stop_token_texts=facts.stop_texts,
        stop_strings=stop_strings,
        fallback=fallback,
        system=modelfile.system if modelfile is not None else None,
        modelfile_messages=tuple({"role": m.role, "content": m.content} for m in modelfile.messages) if modelfile else (),
        notes=tuple(notes),
        loaded=loaded,
        gguf=vocab,
    )


@dataclass(frozen=True)
class _VocabFacts:
    bos_text: str | None
    eos_text: str | None
    adds_bos: bool
    adds_eos: bool
    stop_texts: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _ollama_vocab_facts(vocab: GGUFVocab | None, loaded: LoadedTokenizer | None, assumed: LoadedTokenizer | None) -> _VocabFacts:
    if vocab is not None:
        if (vocab.architecture or "") in OLLAMA_ENGINE_ARCHITECTURES:
            ids = (vocab.eos_id, *vocab.eos_token_ids)
            stops = tuple(dict.fromkeys(vocab.tokens[i] for i in ids if i is not None and 0 <= i < len(vocab.tokens)))
            note = f"architecture {vocab.architecture} runs on Ollama's engine: it stops on eos_token_id(s) only"
        else:
            stops = tuple(vocab.tokens[i] for i in vocab.end_of_generation_ids)
            note = f"architecture {vocab.architecture} runs on Ollama's llama.cpp runner: it stops on llama.cpp's EOG tokens"
        return _VocabFacts(vocab.bos_text, vocab.eos_text, vocab.add_bos, vocab.add_eos, stops, (note,))
    source = loaded or assumed
    if source is None:
        return _VocabFacts(None, None, False, False, (), ("no vocabulary known: BOS and stop tokens are not modelled",))
    tok = source.tokenizer
    note = ("vocab read from the FROM folder" if loaded is not None
            else "FROM names a model in Ollama's store: its vocabulary is assumed to be the train tokenizer's")
    return _VocabFacts(tok.bos_token, tok.eos_token, tokenizer_adds_bos(tok), False, _hf_stop_texts(source), (note,))


def _imported_template(vocab: GGUFVocab | None, loaded: LoadedTokenizer | None) -> str | None:
    if vocab is not None:
        return vocab.chat_template
    return loaded.chat_template if loaded is not None else None


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


def _hf_stop_texts(loaded: LoadedTokenizer) -> tuple[str, ...]:
    tok = loaded.tokenizer
    ids = (tok.eos_token_id, *loaded.generation_eos_ids)
    return tuple(dict.fromkeys(tok.convert_ids_to_tokens(i) for i in ids if i is not None))


def _read_gguf(path: str | Path) -> GGUFVocab:
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

    class GenerationTags(Extension):
        tags = {"generation"}  # noqa: RUF012 - jinja2 reads the class attribute

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body, lineno=lineno)

    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols", GenerationTags])
    try:
        env.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        return exc.lineno, exc.message or "syntax error"
    return None


def _check_go_template(source: str, spec: str) -> None:
    from mldebug_cli.render import ollama

    try:
        ollama.parse_template(source)
    except InputError as exc:
        from mldebug_cli.render.gotemplate import TemplateLimitError

        if isinstance(exc, TemplateLimitError):  # Ollama would take it; mldebug does not parse that much
            raise InputError(f"{spec}: TEMPLATE is not read: {exc.message}") from None
        raise InputError(f"{spec}: TEMPLATE does not parse: {exc.message}", hint="ollama create refuses it too") from None
