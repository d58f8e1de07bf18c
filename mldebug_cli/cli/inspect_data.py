"""`mldebug inspect-data`: every token of a dataset with the label the trainer would give it."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from mldebug_cli.cli.common import (
    ColorOpt,
    ExitZeroOpt,
    FailOnOpt,
    IgnoreOpt,
    OnlineOpt,
    OutputFormatOpt,
    OutputOpt,
    OutputOptions,
    SelectOpt,
    split_list,
)
from mldebug_cli.core.errors import UsageError


def inspect_data(
    dataset: str = typer.Argument(..., help="A .json/.jsonl/.parquet/.csv file, a save_to_disk folder, or a cached hub id."),
    tokenizer: str = typer.Option(..., "--tokenizer", "-t", help="Tokenizer folder (or cached hub id)."),
    chat_template: Path | None = typer.Option(None, "--chat-template", help="A .jinja file overriding the tokenizer's template."),
    data_format: str | None = typer.Option(None, "--data-format", help="messages, sharegpt, alpaca, prompt-completion, text or tokenized (default: detected)."),
    framework: str = typer.Option("trl", "--framework", help="Whose tokenization to emulate: trl, transformers, axolotl, llama-factory."),
    train_on: str | None = typer.Option(None, "--train-on", help="assistant, all, last or completion (default: the framework's default)."),
    max_length: int | None = typer.Option(None, "--max-length", help="Truncate to this many tokens, as the trainer would."),
    task: str | None = typer.Option(None, "--task", help="sft, dpo (also IPO pairs), orpo, kto (also on chosen/rejected pairs) or grpo (default: from the columns)."),
    truncation_mode: str | None = typer.Option(None, "--truncation-mode", help="DPO: keep_start (default) or keep_end."),
    reward_columns: list[str] | None = typer.Option(None, "--reward-columns", help="GRPO: columns the reward functions read, e.g. answer."),
    rows: str | None = typer.Option(None, "--rows", help="Check and show these rows, e.g. 3,10-12 (0-based)."),
    sample: int | None = typer.Option(None, "--sample", help="Check N rows evenly spaced over the dataset (default 200)."),
    all_rows: bool = typer.Option(False, "--all", help="Check every row."),
    show: int = typer.Option(2, "--show", help="How many rows to show when --rows is not given (the most serious first)."),
    tokens: bool = typer.Option(False, "--tokens", help="Add the per-token table (id, piece, label) to each shown row "
                                "(always with --rows; JSON and HTML have every token)."),
    workers: int | None = typer.Option(None, "--workers", help="Processes for large runs (default: one per core)."),
    split: str | None = typer.Option(None, "--split", help="Split of a hub or save_to_disk dataset."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code", help="Allow code from the tokenizer folder (off by default)."),
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
    online: bool = OnlineOpt,
) -> None:
    """Show every token with its label, and check the rows for masking, BOS/EOS and truncation defects."""
    from mldebug_cli.cli.common import errors_exit, resolve_output_format, run_report
    from mldebug_cli.formats import check_format
    from mldebug_cli.sources.hub import require_local_or_cached

    with errors_exit():  # flags and names first: a typo fails before the pipeline and its libraries load
        check_format(resolve_output_format(output_format))
        require_local_or_cached(tokenizer, "tokenizer")
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    with errors_exit():
        options = InspectOptions(
            dataset=dataset,
            tokenizer=tokenizer,
            chat_template=str(chat_template) if chat_template else None,
            data_format=data_format,
            framework=framework,
            train_on=train_on,
            max_length=max_length,
            rows=parse_rows(rows) if rows else None,
            sample=sample,
            all_rows=all_rows,
            show=show,
            token_table=tokens,
            select=tuple(split_list(select)),
            ignore=tuple(split_list(ignore)),
            split=split,
            trust_remote_code=trust_remote_code,
            workers=workers,
            task=task,
            truncation_mode=truncation_mode,
            reward_columns=tuple(split_list(reward_columns)),
        )
    opts = OutputOptions(output_format, output, fail_on, color, exit_zero)
    run_report(lambda: _with_progress(build_report, options), opts)


def parse_rows(text: str) -> tuple[int, ...]:
    """``"3,10-12"`` -> ``(3, 10, 11, 12)``."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                first, last = (int(x) for x in part.split("-", 1))
                if last < first:
                    raise ValueError
                out.extend(range(first, last + 1))
            elif part:
                out.append(int(part))
        except ValueError:
            raise UsageError(f"--rows: cannot read {part!r}", hint="use 0-based row numbers and ranges, e.g. 3,10-12") from None
    if not out or min(out) < 0:
        raise UsageError("--rows: give 0-based row numbers, e.g. 3,10-12")
    return tuple(out)


def _with_progress(build, options):
    """A progress bar on stderr when it is a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return build(options)
    from rich.progress import Progress

    with Progress(transient=True, console=None) as progress:
        task = progress.add_task("inspecting rows", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return build(options, advance)
