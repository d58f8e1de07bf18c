"""`mldebug explain NAME|CODE`: print a check's documentation; with no argument, the list of checks."""

from __future__ import annotations

import typer

from mldebug_cli.cli.common import errors_exit


def explain(
    check: str | None = typer.Argument(None, help="A check code (DS001) or name (no-trainable-tokens)."),
    all_checks: bool = typer.Option(False, "--all", help="Document every check."),
    output_format: str = typer.Option("text", "--output-format", "-f", help="text or markdown."),
) -> None:
    """Explain what a check finds, why it matters for training, and how to fix it."""
    from mldebug_cli.core import registry
    from mldebug_cli.core.errors import UsageError

    with errors_exit():
        if all_checks and check is not None:
            raise UsageError("explain takes one check, or --all")
        if output_format not in ("text", "markdown"):
            raise UsageError(f"--output-format: unknown format {output_format!r}", hint="choose text or markdown")
        if check is None and not all_checks:  # the catalogue: one line per check
            checks = [registry.load(ref) for ref in registry.REGISTRY]
            if output_format == "markdown":
                typer.echo(_markdown(checks), nl=False)
                return
            width = max(len(c.name) for c in checks)
            typer.echo("\n".join(f"{c.code}  {c.name:<{width}}  {c.severity.value:<7}  {c.documentation.first_sentence}"
                                  for c in checks))
            typer.echo("\nmldebug explain CODE|NAME for one check's documentation; --all for every one.")
            return
        refs = registry.REGISTRY if check is None else (registry.lookup(check),)  # (no check here: --all)
        checks = [registry.load(ref) for ref in refs]
        if output_format == "markdown":
            typer.echo(_markdown(checks), nl=False)
        else:
            typer.echo("\n\n".join(_text(c) for c in checks))


def _text(check) -> str:
    return f"{check.code} {check.name} ({check.severity.value}, looks at: {check.subject})\n\n{check.doc}"


def _markdown(checks) -> str:
    lines = ["| code | name | severity | what it finds |", "|---|---|---|---|"]
    for c in checks:
        lines.append(f"| {c.code} | `{c.name}` | {c.severity.value} | {_cell(c.documentation.summary)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text for a markdown table cell: its pipes escaped."""
    return text.replace("|", "\\|")
