"""vLLM's chat route: the tokenizer's Jinja template rendered as transformers renders it, the prompt tokenized
without special tokens (``ChatCompletionRequest.add_special_tokens=False``), generation stopped on the EOS and
generation_config.json's eos_token_id. The default engine for a tokenizer folder or a ``.jinja``."""

from __future__ import annotations

from mldebug_cli.engines import hf, sides
from mldebug_cli.engines.engine import Engine

ENGINE: Engine = Engine(
    name="vllm",
    deploy_side=lambda spec, kind, train, trust: sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust),
    render_side=None,
    render=hf.render,
)
