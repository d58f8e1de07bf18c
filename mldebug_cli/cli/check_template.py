"""`mldebug check-template`: the chat template as trained versus as deployed, probe by probe."""

from __future__ import annotations

from pathlib import Path

import typer

from mldebug_cli.cli.common import (
    ColorOpt,
    ExitZeroOpt,
    FailOn,
    IgnoreOpt,
    OnlineOpt,
    OutputFormatOpt,
    OutputOpt,
    OutputOptions,
    SelectOpt,
    engine_choices,
    fail_on_option,
    split_list,
)


def check_template(
    train: str = typer.Option(..., "--train", help="Tokenizer folder (its template), or a .jinja with --train-tokenizer."),
    deploy: str = typer.Option(..., "--deploy", help="A .gguf, an Ollama Modelfile, a .jinja (--chat-template) or a "
                               "tokenizer folder."),
    train_tokenizer: str | None = typer.Option(None, "--train-tokenizer", help="Tokenizer folder for a .jinja TRAIN."),
    deploy_engine: str | None = typer.Option(None, "--deploy-engine", help=engine_choices("serves")),
    messages: Path | None = typer.Option(None, "--messages", "-m", help="Also compare this conversation (JSON)."),
    date: str | None = typer.Option(None, "--date", help="The date templates see, YYYY-MM-DD (default 2025-01-15)."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow code from tokenizer folders."),
    interleave_mm_strings: bool = typer.Option(False, "--interleave-mm-strings", help="vLLM serves with "
                                               "--interleave-mm-strings (image markers where the image parts are)."),
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on: FailOn = fail_on_option(FailOn.warning, ": any prompt difference"),
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
    online: bool = OnlineOpt,
) -> None:
    """Render probe conversations through the training and the deployment template and diff text and tokens."""
    from mldebug_cli.cli.common import errors_exit, run_report
    from mldebug_cli.cli.render import parse_date
    from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report

    with errors_exit():
        options = CheckTemplateOptions(
            train=train,
            deploy=deploy,
            train_tokenizer=train_tokenizer,
            deploy_engine=deploy_engine,
            messages=str(messages) if messages else None,
            select=tuple(split_list(select)),
            ignore=tuple(split_list(ignore)),
            now=parse_date(date),
            trust_remote_code=trust_remote_code,
            interleave_mm_strings=interleave_mm_strings,
        )
    opts = OutputOptions(output_format, output, fail_on, color, exit_zero)
    run_report(lambda: build_report(options), opts)
