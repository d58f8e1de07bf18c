"""llama.cpp (llama-server --jinja): BOS/EOS ids added per the vocab's add_bos/add_eos flags (``common_tokenize``
with ``add_special``), special-token text parsed, generation stopped on every end-of-generation token
(``llama_vocab_is_eog``). A GGUF without a template, or with one that does not parse, renders as ChatML."""

from __future__ import annotations

from dataclasses import replace

from mldebug_cli.engines import sides
from mldebug_cli.engines.engine import Engine, RenderSource
from mldebug_cli.sources.deploy import Side, hf_as_gguf_vocab, jinja_parses, read_gguf
from mldebug_cli.sources.gguf_file import GGUFVocab


def gguf_side(spec: str, vocab: GGUFVocab, role: str) -> Side:
    fallback = None
    if not vocab.chat_template:
        fallback = "the GGUF has no tokenizer.chat_template, so llama.cpp renders ChatML"
    elif not jinja_parses(vocab.chat_template):
        fallback = "the GGUF's template does not parse: llama.cpp refuses to load it (older builds fell back to ChatML)"
    return Side(
        role=role,
        spec=spec,
        kind="gguf",
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
        **ENGINE.side_facts(),
    )


def converted(side: Side) -> Side:
    """A Hugging Face tokenizer's side as llama.cpp serves it after convert_hf_to_gguf: its vocab flags and EOG tokens."""
    assert side.loaded is not None  # a tokenizer's side
    vocab = hf_as_gguf_vocab(side.loaded)
    return replace(side, adds_bos=vocab.add_bos, adds_eos=vocab.add_eos,
                   stop_token_texts=tuple(vocab.tokens[i] for i in vocab.end_of_generation_ids),
                   notes=("llama.cpp vocab flags assumed from the tokenizer (as convert_hf_to_gguf writes them)",))


def deploy_side(spec: str, kind: str, train: Side, trust_remote_code: bool) -> Side:
    if kind == "gguf":
        return gguf_side(spec, read_gguf(spec), "deploy")
    return converted(sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust_remote_code))


def render_side(source: RenderSource) -> Side:
    if source.kind == "gguf":
        assert source.gguf is not None  # RenderSource sets the path of its kind
        return replace(gguf_side(source.gguf, read_gguf(source.gguf), "render"), loaded=source.loaded)
    side = sides.render_template_side(ENGINE, source)
    return converted(side) if side.loaded is not None else side


def render(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render.llamacpp import render_llamacpp

    enable_thinking = variables.pop("enable_thinking", None)
    return render_llamacpp(
        side.template,
        messages,
        bos_token=side.bos_text or "",
        eos_token=side.eos_text or "",
        add_bos=side.adds_bos,
        add_eos=side.adds_eos,
        add_generation_prompt=add_generation_prompt,
        tools=list(tools) or None,
        enable_thinking=enable_thinking,
        extra_vars=variables,
        now=now,
        template_name=side.template_source,
    ).prompt


ENGINE: Engine = Engine(
    name="llamacpp",
    deploy_side=deploy_side,
    render_side=render_side,
    render=render,
    serve_hint="serve with the training template (llama-server --jinja --chat-template-file FILE) or fix the "
    "GGUF's tokenizer.chat_template",
    image_refusal="llama-server (mtmd) puts its <__media__> marker where an image part was and renders through its "
    "C++ template code; no Python of it to hold mldebug to, so its image prompts are not emulated",
    stop_hint="set the GGUF's tokenizer.ggml.eot_token_id to {eot} (gguf_set_metadata), or pass it as a stop string",
)
