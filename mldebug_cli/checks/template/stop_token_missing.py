"""What it finds
The end-of-turn token the model was trained to emit (the first special token after assistant content in
the train template) is not a stop condition at deploy: not among the runtime's end-of-generation ids
(GGUF eos/eot ids and llama.cpp's end-of-generation tokens, Ollama's eos ids, generation_config
`eos_token_id`) and not matched by a stop string (Modelfile `PARAMETER stop`).

Why it matters for training
The model ends its reply exactly as trained, and the server keeps generating: it invents the next user
turn, or rambles until max_tokens.

Example
A Qwen3-Base fine-tune with the ChatML template, converted with the base tokenizer (eos
`<|endoftext|>`), served by an Ollama Modelfile without `PARAMETER stop "<|im_end|>"`: Ollama's engine
stops on `eos_token_id` only, so `<|im_end|>` does not end the reply.

Fix
Add the token as a stop: `PARAMETER stop "<|im_end|>"` (Ollama), its id in `eos_token_id` of
generation_config.json (vLLM, TGI), or in the GGUF's eos/eot metadata (llama.cpp).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mldebug_cli.checks.template import at_deploy
from mldebug_cli.core.findings import Hit
from mldebug_cli.engines.registry import engine

if TYPE_CHECKING:
    from mldebug_cli.render.diff import TemplateComparison

SEVERITY = "error"
SUBJECT = "template"

def run(subject: TemplateComparison, ctx: TemplateComparison) -> Iterator[Hit]:
    eot, deploy = subject.end_of_turn, subject.deploy
    if not eot or eot in deploy.stop_token_texts or any(s and s in eot for s in deploy.stop_strings):
        return
    stops = ", ".join(deploy.stop_token_texts) or "no token"
    strings = f" and the strings {', '.join(repr(s) for s in deploy.stop_strings)}" if deploy.stop_strings else ""
    hint = engine(deploy.engine).stop_hint.format(eot=eot)
    yield Hit(
        f"the model was trained to end its turns with {eot}, but {deploy.engine} stops only on {stops}{strings}",
        hint,
        at_deploy(subject),
    )
