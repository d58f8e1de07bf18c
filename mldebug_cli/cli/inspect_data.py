"""`mldebug inspect-data`: every token of a dataset with the label the trainer would give it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from mldebug_cli.cli.common import (
    AllowOutsidePathsOpt,
    ColorOpt,
    ExitZeroOpt,
    FailOnOpt,
    IgnoreOpt,
    OnlineOpt,
    OutputFormatOpt,
    OutputOpt,
    OutputOptions,
    RayAddressOpt,
    RayConcurrencyOpt,
    SelectOpt,
    configs_for,
    split_list,
    with_framework_flags,
)
from mldebug_cli.core.errors import UsageError
from mldebug_cli.core.findings import KEPT_PER_CHECK
from mldebug_cli.frameworks.registry import DEFAULT_ROWS, FLAGS, names_for

if TYPE_CHECKING:
    from mldebug_cli.frameworks.framework import Framework


@with_framework_flags
def inspect_data(
    dataset: str | None = typer.Argument(None, help="A .json/.jsonl/.parquet/.csv file, a save_to_disk folder, or a cached "
                                         "hub id; with --config, one of its datasets by path or name (default: its first)."),
    tokenizer: str | None = typer.Option(None, "--tokenizer", "-t", help="Tokenizer folder (or cached hub id); default "
                                         "with --config: the config's model when it is a local folder."),
    config: Path | None = typer.Option(None, "--config", help=f"A training config ({configs_for('plan', 'rows')}): "
                                       "its framework, tokenizer, template, masking and max length, as preflight reads "
                                       "them; flags given here win."),
    allow_outside_paths: bool = AllowOutsidePathsOpt,
    chat_template: Path | None = typer.Option(None, "--chat-template", help="A .jinja file overriding the tokenizer's template."),
    data_format: str | None = typer.Option(None, "--data-format", help="messages, sharegpt, alpaca, prompt-completion, text or tokenized (default: detected)."),
    framework: str | None = typer.Option(None, "--framework", help="Whose tokenization to emulate: "
                                         f"{DEFAULT_ROWS} (the default without --config), "
                                         f"{', '.join(n for n in names_for('rows') if n != DEFAULT_ROWS)}."),
    template: str | None = typer.Option(None, "--template", help="llama-factory: its own template by name, e.g. qwen3 "
                                        "(default: parsed from the tokenizer's chat template, as LLaMA-Factory does)."),
    train_on: str | None = typer.Option(None, "--train-on", help="assistant, all, last or completion (default: the framework's default)."),
    max_length: int | None = typer.Option(None, "--max-length", help="Truncate to this many tokens, as the trainer would."),
    task: str | None = typer.Option(None, "--task", help="sft, dpo (also IPO pairs), orpo, kto (also on chosen/rejected pairs) or grpo (default: from the columns)."),
    truncation_mode: str | None = typer.Option(None, "--truncation-mode", help="TRL SFT and DPO: keep_start (default) or keep_end."),
    reward_columns: list[str] | None = typer.Option(None, "--reward-columns", help="GRPO: columns the reward functions read, e.g. answer."),
    framework_flags=None,  # each framework's own flags (frameworks.registry.Flag), filled in by with_framework_flags
    transformers_version: str | None = typer.Option(None, "--transformers-version", help="The transformers the run "
                                                    "uses: its tokenizer is built as that release builds it (default: "
                                                    "the newest the framework's pin allows when the installed one is "
                                                    "outside it, else the installed one)."),
    model: Path | None = typer.Option(None, "--model", help="A model folder (or its config.json): ids at or beyond "
                                      "its embedding rows are flagged (default: the tokenizer folder's config.json)."),
    step: int | None = typer.Option(None, "--step", help="With --config: check and show the rows of optimizer step "
                                    "N (1-based), as the config's trainer batches them (seed, accumulation, ranks)."),
    world_size: int = typer.Option(1, "--world-size", help="With --step: data-parallel processes (each its own "
                                   "micro-batches)."),
    rows: str | None = typer.Option(None, "--rows", help="Check and show these rows, e.g. 3,10-12 (0-based)."),
    sample: int | None = typer.Option(None, "--sample", help="Check N rows evenly spaced over the dataset (default 200)."),
    all_rows: bool = typer.Option(False, "--all", help="Check every row."),
    all_findings: bool = typer.Option(False, "--all-findings", help="Keep every finding in the report (default: the "
                                      "first 1,000 of each check in full, the rest counted, so memory stays flat)."),
    show: int = typer.Option(2, "--show", help="How many rows to show when --rows is not given (the most serious first)."),
    tokens: bool = typer.Option(False, "--tokens", help="Add the per-token table (id, piece, label) to each shown row "
                                "(always with --rows; JSON and HTML have every token)."),
    workers: int | None = typer.Option(None, "--workers", help="Processes for large runs (default: one per core)."),
    engine: str = typer.Option("local", "--engine", help="local (this machine) or ray: the rows checked on a Ray "
                               "cluster with Ray Data (pip install 'mldebug[ray]'); the same report."),
    ray_address: str | None = RayAddressOpt,
    ray_concurrency: int | None = RayConcurrencyOpt,
    split: str | None = typer.Option(None, "--split", help="Split of a hub or save_to_disk dataset."),
    eval_dataset: str | None = typer.Option(None, "--eval-dataset", help="The eval set: every training row is compared "
                                            "with it for exact (DS053) and near (DS054) duplicates."),
    eval_split: str | None = typer.Option(None, "--eval-split", help="Split of --eval-dataset (a hub or save_to_disk "
                                          "dataset)."),
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
        if config is None:
            _require_without_config(dataset, tokenizer)
            if step is not None:
                raise UsageError("--step needs --config CONFIG (its batch size, accumulation and seed)")
        if step is not None and rows is not None:
            raise UsageError("give either --step or --rows, not both")
        if tokenizer is not None:
            require_local_or_cached(tokenizer, "tokenizer")
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    with errors_exit():
        named_rows = parse_rows(rows) if rows else None
        owner = flag_owner(framework_flags)  # the framework whose own flags were given, looked up once
        options = InspectOptions(
            dataset=dataset or "",
            tokenizer=tokenizer or "",
            chat_template=str(chat_template) if chat_template else None,
            data_format=data_format,
            framework=framework or (owner.name if owner else DEFAULT_ROWS),
            template=template,
            train_on=train_on,
            max_length=max_length,
            rows=named_rows,
            sample=sample,
            all_rows=all_rows,
            findings_kept=None if all_findings else KEPT_PER_CHECK,
            show=show,
            token_table=tokens,
            select=tuple(split_list(select)),
            ignore=tuple(split_list(ignore)),
            split=split,
            trust_remote_code=trust_remote_code,
            workers=workers,
            engine=engine,
            ray_address=ray_address,
            ray_concurrency=ray_concurrency,
            task=task,
            truncation_mode=truncation_mode,
            reward_columns=tuple(split_list(reward_columns)),
            framework_flags=read_framework_flags(framework_flags, owner),
            model=str(model) if model else None,
            transformers_version=transformers_version,
            eval_dataset=eval_dataset,
            eval_split=eval_split,
            resolved=owner,
        )
        reader = None  # the framework that read --config: --step's batch plan asks it too
        if config is not None:
            build_report, options, reader = _configured(str(config), dataset, options, allow_outside_paths, {
                "tokenizer": tokenizer, "chat_template": chat_template, "data_format": data_format,
                "framework": framework, "train_on": train_on, "max_length": max_length, "split": split})
        if owner is not None:
            build_report = _with_flagged_tokenizer(build_report, framework_flags, options.framework, owner)
        if step is not None:
            from mldebug_cli.pipelines.batch_step import at_step

            build_report = at_step(build_report, str(config), step, world_size, reader)
    opts = OutputOptions(output_format, output, fail_on, color, exit_zero)
    run_report(lambda: _with_progress(build_report, options), opts)


def flag_owner(given: dict[str, str]) -> Framework | None:
    """The framework whose own flags were given (None: none was); a UsageError when they belong to different ones."""
    if not given:
        return None
    owners = {FLAGS[option].name for option in given}
    if len(owners) > 1:
        raise UsageError(f"{'/'.join(given)}: these flags belong to different frameworks ({', '.join(sorted(owners))})")
    from mldebug_cli.frameworks.registry import load

    return load(FLAGS[next(iter(given))])


def read_framework_flags(given: dict[str, str], owner: Framework | None = None):
    """The settings of a framework's own flags (its ``read_flags``); None when none was given. ``owner``: their
    framework, when the caller has it (``flag_owner``)."""
    owner = owner or flag_owner(given)
    if owner is None:
        return None
    read_flags = owner.read_flags
    assert read_flags is not None  # FLAGS holds only frameworks with their own flags
    return read_flags(given)


def _with_flagged_tokenizer(build, given: dict[str, str], chosen: str, flagged: Framework):
    """``build`` for ``flagged``, the framework whose flags were given, on the tokenizer its flags make (the report
    says so)."""
    from dataclasses import replace

    owner = FLAGS[next(iter(given))]
    if chosen != owner.name:
        verb = "is" if len(given) == 1 else "are"
        raise UsageError(f"{'/'.join(given)} {verb} {owner.shown}'s, not {chosen}'s", hint=f"pass --framework {owner.name}")
    make = flagged.flagged_tokenizer
    if make is None:
        return build

    def built(options, progress=None):
        made = make(options.tokenizer, options.framework_flags)
        if made is None:
            return build(options, progress)
        tokenizer, context = made
        report = build(replace(options, tokenizer=tokenizer), progress)
        return replace(report, context={**report.context, **context})

    return built


def _require_without_config(dataset: str | None, tokenizer: str | None) -> None:
    if dataset is None:
        raise UsageError("give the DATASET to inspect", hint="or --config CONFIG to inspect the training config's dataset")
    if tokenizer is None:
        raise UsageError("--tokenizer is required (or --config CONFIG naming a local model)",
                         hint="pass the tokenizer folder: --tokenizer DIR")


def _configured(config: str, dataset: str | None, options, allow_outside_paths: bool, flags: dict):
    """The config's settings under the flags given (a flag left at its default is None): (build, options, the
    framework that read the config)."""
    from mldebug_cli.pipelines.preflight import configured_inspect, inspect_with_config

    given = frozenset(name for name, value in flags.items() if value is not None)
    configured = configured_inspect(config, dataset, options, given, allow_outside_paths)
    from dataclasses import replace

    return ((lambda options, progress=None: inspect_with_config(replace(configured, options=options), progress)),
            configured.options, configured.reader)


MAX_ROWS_NAMED = 1_000_000  # rows --rows may list (each is kept, and shown in the report)


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
                if len(out) + last - first + 1 > MAX_ROWS_NAMED:
                    raise UsageError(f"--rows: {text[:60]!r} names over {MAX_ROWS_NAMED:,} rows",
                                     hint="check every row with --all, or a sample with --sample N")
                out.extend(range(first, last + 1))
            elif part:
                out.append(int(part))
        except ValueError:
            raise UsageError(f"--rows: cannot read {part!r}", hint="use 0-based row numbers and ranges, e.g. 3,10-12") from None
    if not out or min(out) < 0:
        raise UsageError("--rows: give 0-based row numbers, e.g. 3,10-12")
    return tuple(out)


def _with_progress(build, options):
    """A progress bar on stderr when it is a terminal (Ray shows its own); nothing otherwise."""
    if not sys.stderr.isatty() or options.engine == "ray":
        return build(options)
    from rich.progress import Progress

    with Progress(transient=True, console=None) as progress:
        task = progress.add_task("inspecting rows", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return build(options, advance)
