"""vLLM's ``/v1/completions`` route fed a prompt the client rendered with the tokenizer's chat template (as
transformers' ``apply_chat_template`` renders it). vLLM tokenizes a completion prompt with ``add_special_tokens``
true (``CompletionRequest``'s default; ``ChatCompletionRequest``'s is false), so the tokenizer's own BOS, and its
EOS where its post-processor appends one, are added on top of what the template wrote. Generation stops on the EOS
and generation_config.json's eos_token_id, as on the chat route."""

from __future__ import annotations

from dataclasses import replace

from mldebug_cli.engines import hf, sides
from mldebug_cli.engines.engine import Engine
from mldebug_cli.sources.deploy import Side, tokenizer_adds_bos, tokenizer_adds_eos


def completion_side(side: Side) -> Side:
    """The side with the special tokens the tokenizer adds when it encodes a prompt with add_special_tokens=True."""
    if side.loaded is None:
        return side
    tok = side.loaded.tokenizer
    return replace(side, adds_bos=tokenizer_adds_bos(tok), adds_eos=tokenizer_adds_eos(tok),
                   notes=("vLLM /v1/completions: the prompt is tokenized with add_special_tokens=true",))


ENGINE: Engine = Engine(
    name="vllm-completions",
    deploy_side=lambda spec, kind, train, trust: completion_side(
        sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust)),
    render_side=lambda source: completion_side(sides.render_template_side(ENGINE, source)),
    render=hf.render,
    image_refusal="/v1/completions takes a prompt the client rendered: where its image markers go is the client's",
    double_bos_hint="send the prompt with add_special_tokens: false, or send the messages to /v1/chat/completions",
)
