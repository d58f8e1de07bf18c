"""What every command shares: output options, the one error handler, and the exit code."""

from __future__ import annotations

import enum
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import typer

from mldebug_cli.core.errors import MldebugError
from mldebug_cli.core.exit import ExitCode, exit_code_for
from mldebug_cli.core.findings import Report, Severity


class FailOn(str, enum.Enum):
    error = "error"
    warning = "warning"
    info = "info"


class Color(str, enum.Enum):
    auto = "auto"
    always = "always"
    never = "never"


class State:
    """Global flags set by the root callback."""

    debug: bool = False


OutputFormatOpt = typer.Option("text", "--output-format", "-f", help="text or json.")
OutputOpt = typer.Option(None, "--output", "-o", help="Write the report to FILE instead of stdout.")
FailOnOpt = typer.Option(FailOn.error, "--fail-on", help="Exit 1 when a finding is at or above this severity.")
SelectOpt = typer.Option(None, "--select", help="Only these checks (codes, prefixes or names; repeatable or comma-separated).")
IgnoreOpt = typer.Option(None, "--ignore", help="Skip these checks (codes, prefixes or names; repeatable or comma-separated).")
ColorOpt = typer.Option(Color.auto, "--color", help="Colour in the text report; NO_COLOR is honoured.")
ExitZeroOpt = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings (errors reading input still exit 2).")


def split_list(values: list[str] | None) -> list[str]:
    """``--select DS001,DS002 --select DS003`` -> ``["DS001", "DS002", "DS003"]``."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


@dataclass(frozen=True)
class OutputOptions:
    output_format: str
    output: Path | None
    fail_on: FailOn
    color: Color
    exit_zero: bool = False


def print_error(exc: BaseException) -> None:
    """One line `Error: ...` (and `Hint: ...`) on stderr; the traceback only with --debug."""
    if State.debug:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, MldebugError):
        message, hint = exc.message, exc.hint
    else:
        message = f"internal error: {type(exc).__name__}: {exc}"
        hint = "run with --debug for the traceback and report it"
    sys.stderr.write(f"Error: {' '.join(str(message).split())}\n")
    if hint:
        sys.stderr.write(f"Hint: {hint}\n")


@contextmanager
def errors_exit() -> Iterator[None]:
    """Turn every failure inside the block into a one-line error and exit code 2."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:  # the one top-level handler: never a traceback without --debug
        print_error(exc)
        raise typer.Exit(ExitCode.CANNOT_RUN) from None


def run_report(build: Callable[[], Report], opts: OutputOptions) -> None:
    """Build the report, write it in the chosen format, exit with the code it implies."""
    from mldebug_cli.core.console import use_color
    from mldebug_cli.formats import render_report

    with errors_exit():
        report = build()
        if opts.output is not None:
            with open(opts.output, "w", encoding="utf-8") as stream:
                render_report(report, opts.output_format, stream, color=False)
        else:
            color = opts.output_format == "text" and use_color(opts.color.value, sys.stdout)
            render_report(report, opts.output_format, sys.stdout, color=color)
            sys.stdout.flush()
    if opts.exit_zero:
        raise typer.Exit(ExitCode.CLEAN)
    raise typer.Exit(exit_code_for(report, Severity(opts.fail_on.value)))
