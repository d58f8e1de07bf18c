"""What every command shares: output options, the one error handler, and the exit code."""

from __future__ import annotations

import enum
import functools
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from mldebug_cli.core.errors import MldebugError, in_one_line
from mldebug_cli.core.escape import visible
from mldebug_cli.core.exit import ExitCode, exit_code_for
from mldebug_cli.core.findings import Report, Severity
from mldebug_cli.engines import registry as engine_registry
from mldebug_cli.formats import FORMATS
from mldebug_cli.frameworks.registry import FLAGS, VERSION_LABELS, VERSION_PACKAGES, names_for, serving

if TYPE_CHECKING:
    from mldebug_cli.core.config import Settings


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
    context: Any = None  # the running command's typer context (set by its --output option)


def _given(ctx: typer.Context, param: typer.CallbackParam) -> bool:
    """Whether the user passed the flag (the configuration decides the ones left at their default)."""
    source = ctx.get_parameter_source(param.name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


def load_settings() -> Settings:
    """The configuration (file < environment); its ``[versions]`` may name the framework registry's packages."""
    from mldebug_cli.core import config
    from mldebug_cli.frameworks.registry import VERSION_PACKAGES

    return config.load(version_packages=VERSION_PACKAGES)


def _settings(ctx: typer.Context) -> Settings:
    """The configuration (file < environment), read once per command run."""
    if "mldebug.settings" not in ctx.meta:
        with errors_exit():
            ctx.meta["mldebug.settings"] = load_settings()
    return ctx.meta["mldebug.settings"]


def _configured_select(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    return value if _given(ctx, param) else list(_settings(ctx).select)


def _configured_ignore(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    return value if _given(ctx, param) else list(_settings(ctx).ignore)


def _configured_fail_on(ctx: typer.Context, param: typer.CallbackParam, value: Any) -> Any:
    """The flag, else the configuration's fail-on, else the command's own default (the option's default)."""
    if _given(ctx, param):
        return value
    configured = _settings(ctx).fail_on
    return value if configured is None else FailOn(configured.value)


OutputFormatOpt = typer.Option(
    "auto", "--output-format", "-f",
    help=f"auto (github under GitHub Actions, else text), {', '.join(FORMATS)}.",
)


def remember_context(ctx: typer.Context, value: Any) -> Any:
    """The command's context, for the files its arguments name (``note_argument_inputs``)."""
    State.context = ctx
    return value


OutputOpt = typer.Option(None, "--output", "-o", callback=remember_context,
                         help="Write the report to FILE instead of stdout.")


def fail_on_option(default: FailOn, why: str = "") -> Any:
    """``--fail-on``: the flag, else fail-on from the configuration, else ``default`` (the command's own)."""
    return typer.Option(
        default, "--fail-on", callback=_configured_fail_on, show_default=False,
        help=f"Exit 1 when a finding is at or above this severity (default: fail-on from the config file, else "
        f"{default.value}{why}).",
    )


FailOnOpt = fail_on_option(FailOn.error)
SelectOpt = typer.Option(
    None, "--select", callback=_configured_select,
    help="Only these checks (codes, prefixes or names; repeatable or comma-separated; replaces the config's select).",
)
IgnoreOpt = typer.Option(
    None, "--ignore", callback=_configured_ignore,
    help="Skip these checks (codes, prefixes or names; repeatable or comma-separated; replaces the config's ignore).",
)
ColorOpt = typer.Option(Color.auto, "--color", help="Colour in the text report; NO_COLOR is honoured.")
def _online(value: bool) -> bool:
    if value:
        from mldebug_cli.sources.hub import go_online

        go_online()
    return value


OnlineOpt = typer.Option(
    False, "--online", callback=_online,
    help="Let transformers/datasets download what is not in the local cache (default: offline; or MLDEBUG_ONLINE=1).",
)
ExitZeroOpt = typer.Option(False, "--exit-zero", help="Exit 0 even when there are findings (errors reading input still exit 2).")
AllowOutsidePathsOpt = typer.Option(False, "--allow-outside-paths",
                                    help="Let the config name files outside the working directory and its own folder.")
RayAddressOpt = typer.Option(None, "--ray-address", help="--engine ray: the cluster, e.g. auto or HOST:6379 (default: "
                             "$RAY_ADDRESS, else a new local one).")
RayConcurrencyOpt = typer.Option(None, "--ray-concurrency",
                                 help="--engine ray: actors checking rows (default: one per CPU of the cluster).")
_VERSION_HELP = "The {} version the run uses (default: mldebug.toml [versions], a requirements.txt/lockfile beside the config, else the installed one)."
VERSION_FLAGS = "target_versions"  # the parameter version_flags fills


def version_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with one ``--<package>-version`` option per framework package of the registry, in the place of
    its ``target_versions`` parameter, which receives the flags as a dict by package."""
    signature = inspect.signature(command)
    flags = [inspect.Parameter(f"{package}_version", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Optional[str],  # noqa: UP045 - typer reads it
                               default=typer.Option(None, f"--{package}-version",
                                                    help=_VERSION_HELP.format(VERSION_LABELS[package])))
             for package in VERSION_PACKAGES]
    parameters = []
    for parameter in signature.parameters.values():
        parameters += flags if parameter.name == VERSION_FLAGS else [parameter]

    @functools.wraps(command)
    def with_flags(**kwargs: Any) -> Any:
        given = {package: kwargs.pop(f"{package}_version") for package in VERSION_PACKAGES}
        return command(**kwargs, **{VERSION_FLAGS: given})

    with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return with_flags


FRAMEWORK_FLAGS = "framework_flags"  # the parameter with_framework_flags fills


def with_framework_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with every framework's own flags (the registry's ``Flag`` lines) in the place of its
    ``framework_flags`` parameter, which receives the flags given as a dict by option."""
    signature = inspect.signature(command)
    own = [flag for entry in dict.fromkeys(FLAGS.values()) for flag in entry.flags]
    flags = [inspect.Parameter(flag.parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Optional[str],  # noqa: UP045 - typer reads it
                               default=typer.Option(None, flag.option, help=flag.help)) for flag in own]
    parameters = []
    for parameter in signature.parameters.values():
        parameters += flags if parameter.name == FRAMEWORK_FLAGS else [parameter]

    @functools.wraps(command)
    def with_flags(**kwargs: Any) -> Any:
        given = {flag.option: kwargs.pop(flag.parameter) for flag in own}
        return command(**kwargs, **{FRAMEWORK_FLAGS: {option: value for option, value in given.items() if value is not None}})

    with_flags.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    return with_flags


def configured_versions() -> dict[str, str]:
    """``[versions]`` of mldebug.toml / ``[tool.mldebug.versions]``."""
    return dict(load_settings().versions)


def or_list(names: tuple[str, ...]) -> str:
    """``("a", "b", "c")`` -> ``"a, b or c"``: a registry's names in help text."""
    return f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)


def frameworks_for(*capabilities: str) -> str:
    """The ``--framework`` values of a command that needs ``capabilities`` of a framework (frameworks.registry), as
    help text: ``"transformers, trl, axolotl or llama-factory"``."""
    return or_list(names_for(*capabilities))


def configs_for(*capabilities: str) -> str:
    """The training configs such a command reads, as help text: ``"transformers, TRL, axolotl or LLaMA-Factory"``."""
    return or_list(tuple(entry.shown for entry in serving(*capabilities)))


def engine_choices(purpose: str) -> str:
    """An engine flag's help text from the engine registry: ``"transformers, ... or tgi (default: vllm for a
    tokenizer folder or a .jinja, llamacpp for a GGUF, ollama for a Modelfile)"`` (``purpose``: serves or renders)."""
    names = tuple(entry.name for entry in engine_registry.REGISTRY if getattr(entry, purpose))
    chosen = ", ".join(f"{name} for {or_list(kinds)}" for name, kinds in engine_registry.defaults(purpose))
    return f"{or_list(names)} (default: {chosen})."


def split_list(values: list[str] | None) -> list[str]:
    """``--select DS001,DS002 --select DS003`` -> the three codes DS001, DS002 and DS003, in that order."""
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


OUTPUT_PARAMETERS = {"output": "--output", "sarif": "--sarif", "junit": "--junit", "plot": "--plot"}


def note_argument_inputs() -> None:
    """Every file a command-line argument names, other than the outputs, is an input of the run, read or not. (Of a
    folder, the files the readers open are inputs, and all of a tokenizer folder's: ``check-run out/ -o
    out/report.json`` may run twice, ``-o out/trainer_state.json`` may not.)"""
    from mldebug_cli.core.safe_io import note_inputs

    ctx = State.context
    if ctx is None:
        return
    values = [v for name, v in ctx.params.items() if name not in OUTPUT_PARAMETERS]
    flat = [item for v in values for item in (v if isinstance(v, (list, tuple)) else [v])]
    note_inputs(str(v) for v in flat if isinstance(v, (str, Path)) and v and os.path.isfile(v))


def refuse_argument_inputs(outputs: dict[str, Path | str]) -> None:
    """Before the run: an output path that is a file the arguments name is refused at once (the files found while
    reading are checked again when the report is written)."""
    from mldebug_cli.core.safe_io import refuse_input

    note_argument_inputs()
    for flag, path in outputs.items():
        refuse_input(path, flag)


def write_report(path: Path | str, write: Callable[[Any], None], flag: str = "--output", binary: bool = False) -> None:
    """A report file: never onto an input of the run, never through a symlink, whole or not at all."""
    from mldebug_cli.core.safe_io import write_output

    note_argument_inputs()
    write_output(path, write, flag=flag, binary=binary)


def print_error(exc: BaseException) -> None:
    """One line `Error: ...` (and `Hint: ...`) on stderr; the traceback only with --debug."""
    if State.debug:
        traceback.print_exception(exc, file=sys.stderr)
    if isinstance(exc, MldebugError):
        message, hint = exc.message, exc.hint
    elif isinstance(exc, OSError) and exc.filename is not None and exc.strerror:  # a symlink loop, a name too long,
        message, hint = f"{exc.filename}: {exc.strerror}", None  # no permission: the input's state, not a bug
    elif isinstance(exc, RecursionError):
        message = "the input is nested deeper than mldebug follows (Python's recursion limit)"
        hint = "a template, config or row of thousands of nested levels is not one a trainer reads either"
    else:
        message = f"internal error: {type(exc).__name__}: {exc}"
        hint = "run with --debug for the traceback and report it"
    sys.stderr.write(f"Error: {visible(in_one_line(message))}\n")
    if hint:
        sys.stderr.write(f"Hint: {visible(hint)}\n")


@contextmanager
def errors_exit() -> Iterator[None]:
    """Turn every failure inside the block into a one-line error and exit code 2."""
    try:
        yield
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except BrokenPipeError:  # `mldebug ... | head`: the reader has what it wanted
        close_broken_pipe()
        raise typer.Exit(ExitCode.CLEAN) from None
    except Exception as exc:  # the one top-level handler: never a traceback without --debug
        print_error(exc)
        raise typer.Exit(ExitCode.CANNOT_RUN) from None


def close_broken_pipe() -> None:
    """After the reader of stdout went away: point stdout at /dev/null so the exit flush raises nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a test runner's stream)
        pass


def resolve_output_format(name: str) -> str:
    """``auto`` is ``github`` under GitHub Actions and ``text`` elsewhere; other names stay."""
    if name != "auto":
        return name
    return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"


def run_report(build: Callable[[], Report], opts: OutputOptions) -> None:
    """Build the report, apply the configured severities, write it, exit with the code it implies."""
    from mldebug_cli.core.console import use_color
    from mldebug_cli.formats import check_format, render_report

    with errors_exit():
        output_format = resolve_output_format(opts.output_format)
        check_format(output_format)  # a flag that cannot work fails before anything heavy loads
        if opts.output is not None:
            refuse_argument_inputs({"--output": opts.output})
        report = load_settings().apply(build())
        if opts.output is not None:
            write_report(opts.output, lambda stream: render_report(report, output_format, stream, color=False))
            sys.stderr.write(f"{output_format} report written to {visible(str(opts.output))}\n")
        else:
            color = output_format == "text" and use_color(opts.color.value, sys.stdout)
            render_report(report, output_format, sys.stdout, color=color)
            sys.stdout.flush()
    if opts.exit_zero:
        raise typer.Exit(ExitCode.CLEAN)
    raise typer.Exit(exit_code_for(report, Severity(opts.fail_on.value)))
