"""The typer app. Each subcommand module is thin and imports heavy libraries inside its function."""

from __future__ import annotations

import os
import sys

import typer

# transformers logs "PyTorch was not found. Models won't be available ..." when it is imported without torch: advice
# about models, which mldebug never builds (it reads tokenizers and TrainingArguments). That log is one of
# transformers' advisory warnings, which this switch of its own turns off; it is set before any command imports it.
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

from mldebug_cli import __version__
from mldebug_cli.cli import check_run, check_template, explain, inspect_data, lr_plot, memory, preflight, probe, render
from mldebug_cli.cli.common import State
from mldebug_cli.cli.flag_ranges import ranged

app = typer.Typer(
    name="mldebug",
    help="Preflight checks for LLM fine-tuning: data, chat templates and LR schedules.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich's help renderer imports markdown and pygments (~150 ms)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mldebug {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks for errors."),
    version: bool | None = typer.Option(None, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    from mldebug_cli.core.safe_io import start_run

    State.debug = debug
    State.context = None
    start_run()


app.command("inspect-data")(ranged(inspect_data.inspect_data))
app.command("explain")(ranged(explain.explain))
app.command("render")(ranged(render.render))
app.command("check-template")(ranged(check_template.check_template))
app.command("lr-plot")(ranged(lr_plot.lr_plot))
app.command("preflight")(ranged(preflight.preflight))
app.command("check-run")(ranged(check_run.check_run))
app.command("probe")(ranged(probe.probe))
app.command("memory")(ranged(memory.memory))


# Commands that only read, render and tokenize: their processes never need torch.
TORCH_FREE = frozenset({"inspect-data", "render", "check-template", "check-run", "memory"})


def main() -> None:
    if _command(sys.argv[1:]) in TORCH_FREE:
        from mldebug_cli.sources.tokenizer import keep_torch_out

        keep_torch_out()
    app()


def _command(args: list[str]) -> str | None:
    """The subcommand's name: the first argument that is not a root option (those take no value)."""
    return next((a for a in args if not a.startswith("-")), None)
