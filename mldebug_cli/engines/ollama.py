"""Ollama: the Modelfile's Go TEMPLATE (or, for a GGUF imported without one, the template family ``ollama create``
detects), with the same BOS/EOS flags as llama.cpp; stop strings from ``PARAMETER stop`` (or the detected family's);
token stops depend on the runner: architectures in ``OllamaEngineRequired`` (fs/ggml/ggml.go) run on Ollama's engine,
which stops on ``eos_token_id`` plus ``eos_token_ids`` only; the rest run on llama.cpp, which stops on every
end-of-generation token. Its chat route always ends the prompt for a reply; templates see ``think``."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError
from mldebug_cli.engines.engine import Engine, RenderSource
from mldebug_cli.sources.deploy import Side, hf_stop_texts, read_gguf, read_text, tokenizer_adds_bos
from mldebug_cli.sources.gguf_file import GGUFVocab
from mldebug_cli.sources.tokenizer import LoadedTokenizer, load_tokenizer

# Ollama's OllamaEngineRequired() (fs/ggml/ggml.go): these architectures run on Ollama's own engine.
OLLAMA_ENGINE_ARCHITECTURES = frozenset({
    "bert", "deepseek2", "deepseekocr", "gemma3", "gemma3n", "gemma4", "gptoss", "gpt-oss", "laguna", "llama4",
    "mistral3", "mllama", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni", "nomic-bert", "olmo3", "qwen25vl",
    "qwen3", "qwen3moe", "qwen35", "qwen35moe", "qwen3next", "qwen3vl", "qwen3vlmoe", "glm4moelite", "glmocr",
    "lfm2", "lfm2moe",
})  # fmt: skip


def modelfile_side(spec: str, assumed: LoadedTokenizer | None, role: str = "deploy") -> Side:
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
        vocab = read_gguf(target)
    elif target is not None:
        raise InputError(f"{spec}: FROM {modelfile.from_}: mldebug reads a GGUF file or a model folder, not {target.suffix}")
    else:
        modelfile, vocab = _from_ollama_store(modelfile)
    return ollama_side(spec, "modelfile", vocab, modelfile, assumed, loaded, role)


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
    return inherited, read_gguf(stored.gguf) if stored.gguf is not None else None


def ollama_side(
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
    from mldebug_cli.render import ollama  # its Go template engine, loaded when Ollama is the engine

    notes: list[str] = []
    stop_strings = tuple(modelfile.stop) if modelfile is not None else ()
    fallback = None
    text: str
    if template is not None:
        text, source = template
    elif modelfile is not None and modelfile.template is not None:
        text, source = modelfile.template, f"{spec} (TEMPLATE)"
        check_go_template(text, spec)
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
        family = ollama.detect_family(hf_template, families) if families is not None and hf_template else None
        if family is None:
            text = ollama.DEFAULT_TEMPLATE
            source = "Ollama's raw-prompt default ({{ .Prompt }})"
            fallback = ("the model's chat template matches none of Ollama's template families"
                        if hf_template else "the model has no chat template") + ", so Ollama sends the raw prompt"
        else:
            loaded_family = ollama.load_family(family, families)
            text, source = loaded_family.template, f"Ollama's {family} template (detected on import)"
            stop_strings = stop_strings or loaded_family.stop  # a Modelfile PARAMETER stop replaces the family's
    facts = _ollama_vocab_facts(vocab, loaded, assumed)
    notes.extend(facts.notes)
    return Side(
        role=role,
        spec=spec,
        kind=kind,
        template=text,
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
        **ENGINE.side_facts(),
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
    return _VocabFacts(tok.bos_token, tok.eos_token, tokenizer_adds_bos(tok), False, hf_stop_texts(source), (note,))


def _imported_template(vocab: GGUFVocab | None, loaded: LoadedTokenizer | None) -> str | None:
    if vocab is not None:
        return vocab.chat_template
    return loaded.chat_template if loaded is not None else None


def check_go_template(source: str, spec: str) -> None:
    from mldebug_cli.render import ollama

    try:
        ollama.parse_template(source)
    except InputError as exc:
        from mldebug_cli.render.gotemplate import TemplateLimitError

        if isinstance(exc, TemplateLimitError):  # Ollama would take it; mldebug does not parse that much
            raise InputError(f"{spec}: TEMPLATE is not read: {exc.message}") from None
        raise InputError(f"{spec}: TEMPLATE does not parse: {exc.message}", hint="ollama create refuses it too") from None


def deploy_side(spec: str, kind: str, train: Side, trust_remote_code: bool) -> Side:
    if kind == "gguf":
        return ollama_side(spec, "gguf", read_gguf(spec), None, train.loaded)
    return modelfile_side(spec, train.loaded)


def render_side(source: RenderSource) -> Side:
    if source.kind == "gguf":
        assert source.gguf is not None  # RenderSource sets the path of its kind
        return ollama_side(source.gguf, "gguf", read_gguf(source.gguf), None, source.loaded, role="render")
    if source.kind == "modelfile":
        assert source.modelfile is not None
        return modelfile_side(source.modelfile, source.loaded, role="render")
    assert source.template is not None
    text = read_text(source.template)
    check_go_template(text, source.template)
    return ollama_side(source.template, "gotemplate", None, None, source.loaded, role="render",
                       template=(text, source.template))


def render(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render import ollama

    return ollama.render(
        side.template,
        messages,
        system=side.system,
        modelfile_messages=side.modelfile_messages,
        tools=list(tools) or None,
        think=variables.get("think"),
        today=now.date(),
    )


ENGINE: Engine = Engine(
    name="ollama",
    deploy_side=deploy_side,
    render_side=render_side,
    render=render,
    variables=("think",),
    syntax="go",
    always_opens_reply=True,
    serve_hint="put the training template, translated to Go, in the Modelfile TEMPLATE (with its stop words)",
    stop_hint='add PARAMETER stop "{eot}" to the Modelfile',
    double_bos_hint="remove the literal BOS from the Modelfile TEMPLATE: Ollama adds BOS itself",
    image_refusal="Ollama sends images in a message's images field and its Go server places them ([img-N] in older "
    "releases); no code of it runs here, so its image prompts are not emulated",
)
