"""TGI's chat route: minijinja renders the template without trim_blocks/lstrip_blocks, always ending the prompt for
a reply; its ``GenerateRequest`` carries ``add_special_tokens: false``. Templates see ``guideline`` besides the
messages and tools."""

from __future__ import annotations

from mldebug_cli.engines import sides
from mldebug_cli.engines.engine import Engine


def render(side, messages, tools, add_generation_prompt, now, variables) -> str:
    from mldebug_cli.render.tgi import render_tgi

    return render_tgi(
        side.template,
        messages,
        bos_token=side.bos_text,
        eos_token=side.eos_text,
        tools=list(tools) or None,
        guideline=variables.get("guideline"),
        now=now,
        template_name=side.template_source,
    ).prompt


ENGINE: Engine = Engine(
    name="tgi",
    deploy_side=lambda spec, kind, train, trust: sides.deploy_tokenizer_side(ENGINE, spec, kind, train, trust),
    render_side=lambda source: sides.render_side(ENGINE, source),
    render=render,
    variables=("guideline",),
    always_opens_reply=True,
    serve_hint="fix the template for minijinja (TGI renders without trim_blocks/lstrip_blocks)",
)
