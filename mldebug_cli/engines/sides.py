"""The side builders engines share: a Jinja template served with a Hugging Face tokenizer, and a template alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.sources.deploy import JINJA_SUFFIXES, Side, check_jinja_syntax, hf_stop_texts, read_gguf, read_text
from mldebug_cli.sources.processor_files import processor_files
from mldebug_cli.sources.tokenizer import LoadedTokenizer, load_tokenizer

if TYPE_CHECKING:
    from mldebug_cli.engines.engine import Engine, RenderSource


def train_side(engine: Engine, spec: str, train_tokenizer: str | None, trust_remote_code: bool) -> Side:
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
    # apply_chat_template (and TRL on conversations) tokenizes without special tokens
    side = tokenizer_side(engine, spec, "tokenizer" if path.is_dir() else "jinja", loaded.chat_template,
                          loaded.template_source or spec, loaded, "train")
    return with_processor(side, path if path.is_dir() else None)


def with_processor(side: Side, folder: Path | None) -> Side:
    """A model folder with processor files renders with the processor's own template (TRL and transformers call
    ``processor.apply_chat_template``; vLLM tries the processor's template before the tokenizer's) and carries the
    processor class, which says how its prompts mark images."""
    found = processor_files(folder) if folder is not None else None
    if found is None:
        return side
    if found.template is None or side.template_source != f"{side.spec} (tokenizer)":
        return replace(side, processor_class=found.processor_class)
    check_jinja_syntax(found.template, found.template_source or side.spec)
    return replace(side, template=found.template, template_source=f"{found.template_source} (processor)",
                   processor_class=found.processor_class)


def tokenizer_side(engine: Engine, spec: str, kind: str, template: str, source: str, loaded: LoadedTokenizer | None,
                   role: str) -> Side:
    """A Jinja template served with a Hugging Face tokenizer: the prompt tokenized without special tokens, generation
    stopped on the EOS and generation_config.json's eos_token_id."""
    if loaded is None:
        raise UsageError(f"{spec}: a template alone has no tokenizer; pass one")
    tok = loaded.tokenizer
    return Side(role=role, spec=spec, kind=kind, template=template, template_source=source, bos_text=tok.bos_token,
                eos_text=tok.eos_token, special_tokens=dict(tok.special_tokens_map), adds_bos=False, adds_eos=False,
                stop_token_texts=hf_stop_texts(loaded), loaded=loaded, **engine.side_facts())  # fmt: skip


def deploy_tokenizer_side(engine: Engine, spec: str, kind: str, train: Side, trust_remote_code: bool) -> Side:
    """DEPLOY as a tokenizer folder (its own template) or a ``.jinja`` (with the train side's tokenizer)."""
    if kind == "tokenizer":
        loaded = load_tokenizer(spec, None, trust_remote_code)
        if not loaded.chat_template:
            raise InputError(f"{spec}: the tokenizer has no chat template", hint="vLLM needs --chat-template FILE then")
        side = tokenizer_side(engine, spec, "tokenizer", loaded.chat_template, loaded.template_source or spec, loaded,
                              "deploy")
        return with_processor(side, Path(spec)) if engine.image_messages is not None else side
    template = read_text(spec)
    check_jinja_syntax(template, spec)
    # a template file served for the trained model: the model (its processor) is the train side's
    return replace(tokenizer_side(engine, spec, "jinja", template, spec, train.loaded, "deploy"),
                   processor_class=train.processor_class)


def render_template_side(engine: Engine, source: RenderSource) -> Side:
    """``mldebug render`` of a tokenizer's template, or of a ``.jinja`` (with --tokenizer, or alone)."""
    loaded = source.loaded
    if loaded is not None:
        spec = source.template or source.tokenizer
        assert spec is not None  # a tokenizer was loaded from one of them
        if not loaded.chat_template:
            raise InputError(f"{source.tokenizer}: the tokenizer has no chat template", hint="pass --template FILE")
        check_jinja_syntax(loaded.chat_template, loaded.template_source or spec)
        return tokenizer_side(engine, spec, source.kind, loaded.chat_template, loaded.template_source or spec,
                              loaded, "render")
    assert source.template is not None  # a template without a tokenizer
    text = read_text(source.template)
    check_jinja_syntax(text, source.template)
    return Side(role="render", spec=source.template, kind="jinja", template=text, template_source=source.template,
                bos_text=None, eos_text=None, special_tokens={}, adds_bos=False, adds_eos=False, stop_token_texts=(),
                **engine.side_facts())  # fmt: skip


def render_gguf_template_side(engine: Engine, source: RenderSource) -> Side:
    """``mldebug render`` of a GGUF's own Jinja template by an engine that renders it as written."""
    spec = source.gguf
    assert spec is not None  # the source's kind is gguf
    vocab = read_gguf(spec)
    if not vocab.chat_template:
        raise InputError(f"{spec}: the GGUF has no chat template", hint="--engine llamacpp renders llama.cpp's ChatML fallback")
    check_jinja_syntax(vocab.chat_template, f"{spec} (tokenizer.chat_template)")
    return Side(role="render", spec=spec, kind="gguf", template=vocab.chat_template,
                template_source=f"{spec} (tokenizer.chat_template)", bos_text=vocab.bos_text, eos_text=vocab.eos_text,
                special_tokens={"bos_token": vocab.bos_text, "eos_token": vocab.eos_text}, adds_bos=False,
                adds_eos=False, stop_token_texts=(), loaded=source.loaded, gguf=vocab, **engine.side_facts())  # fmt: skip


def render_side(engine: Engine, source: RenderSource) -> Side:
    """``mldebug render`` by an engine that renders Jinja as transformers does (its own tokenizer, or a GGUF's)."""
    if source.kind == "gguf":
        return render_gguf_template_side(engine, source)
    return render_template_side(engine, source)
