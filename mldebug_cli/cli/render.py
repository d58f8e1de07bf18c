"""`mldebug render`: a conversation rendered exactly as one engine would render it; stdout is the prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from mldebug_cli.cli.common import OnlineOpt, engine_choices, errors_exit, remember_context, write_report
from mldebug_cli.core.escape import no_workflow_commands, under_github_actions, visible

_FORMATS = ("text", "json")


def render(
    messages: Path = typer.Option(..., "--messages", "-m", help="JSON list of messages, or an object with messages (and tools)."),
    tokenizer: str | None = typer.Option(None, "--tokenizer", "-t", help="Tokenizer folder: its template, special tokens and input ids."),
    template: Path | None = typer.Option(None, "--template", help="A .jinja chat template (or an Ollama .gotmpl Go template)."),
    gguf: Path | None = typer.Option(None, "--gguf", help="A GGUF: its chat template and vocab flags, as llama.cpp reads them."),
    modelfile: Path | None = typer.Option(None, "--modelfile", help="An Ollama Modelfile (FROM, TEMPLATE, SYSTEM, MESSAGE)."),
    engine: str | None = typer.Option(None, "--engine", "-e", help=engine_choices("renders")),
    bos_token: str | None = typer.Option(None, "--bos-token", help="The bos_token the template sees."),
    eos_token: str | None = typer.Option(None, "--eos-token", help="The eos_token the template sees."),
    add_generation_prompt: bool = typer.Option(False, "--add-generation-prompt", help="End with the assistant header "
                                               "(Ollama and TGI always do, as their servers do)."),
    variables: list[str] | None = typer.Option(None, "--var", help="Template variable KEY=VALUE (JSON values), repeatable."),
    date: str | None = typer.Option(None, "--date", help="The date templates see, YYYY-MM-DD (default 2025-01-15, "
                                    "fixed so output can be diffed)."),
    output_format: str = typer.Option("text", "--output-format", "-f", help="text (the prompt only) or json."),
    output: Path | None = typer.Option(None, "--output", "-o", callback=remember_context, help="Write to FILE instead of stdout."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow code from the tokenizer folder."),
    online: bool = OnlineOpt,
) -> None:
    """Render a conversation as a deploy engine would (--engine), to diff engines against each other."""
    from mldebug_cli.core.errors import UsageError
    from mldebug_cli.pipelines.render import RenderOptions, build_prompt, parse_variables

    with errors_exit():
        if output_format not in _FORMATS:
            raise UsageError(f"--output-format: unknown format {output_format!r}", hint="choose text or json")
        options = RenderOptions(
            messages=str(messages),
            tokenizer=tokenizer,
            template=str(template) if template else None,
            gguf=str(gguf) if gguf else None,
            modelfile=str(modelfile) if modelfile else None,
            engine=engine,
            bos_token=bos_token,
            eos_token=eos_token,
            add_generation_prompt=add_generation_prompt,
            variables=parse_variables(variables or []),
            now=parse_date(date),
            trust_remote_code=trust_remote_code,
        )
        rendered = build_prompt(options)
        text = rendered.prompt if output_format == "text" else json.dumps(rendered.as_dict(), ensure_ascii=False) + "\n"
        if output is not None:
            write_report(output, lambda stream: stream.write(text))
            sys.stderr.write(f"prompt written to {visible(str(output))}\n")
        else:  # the prompt byte for byte, except on a terminal, where no control character from an input goes raw,
            # and under GitHub Actions, where no line of it may start a workflow command (``::add-mask::``)
            shown = visible(text) if sys.stdout.isatty() else text
            sys.stdout.write(no_workflow_commands(shown) if under_github_actions() else shown)
            sys.stdout.flush()


def parse_date(text: str | None):
    """``--date YYYY-MM-DD`` (or ``today``) -> the clock templates see; None: the fixed default."""
    from datetime import datetime

    from mldebug_cli.core.errors import UsageError
    from mldebug_cli.pipelines.render import FIXED_NOW

    if text is None:
        return FIXED_NOW
    if text == "today":
        return datetime.now()
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(hour=12)
    except ValueError:
        raise UsageError(f"--date {text!r}: expected YYYY-MM-DD or today") from None
