"""`mldebug check-run`: read a training run's logs and say what went wrong, where, and why (RN001-RN032)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import typer

from mldebug_cli.cli.common import (
    ColorOpt,
    ExitZeroOpt,
    FailOnOpt,
    IgnoreOpt,
    OutputFormatOpt,
    OutputOpt,
    OutputOptions,
    SelectOpt,
    errors_exit,
    load_settings,
    print_error,
    run_report,
    split_list,
)
from mldebug_cli.core.registry import Code
from mldebug_cli.sources.runlog import registry as runlog_formats


def check_run(
    run: Path = typer.Argument(..., help=runlog_formats.run_help()),
    config: Path | None = typer.Option(None, "--config", "-c", help="The run's training config (gradient "
                                       "accumulation, max_completion_length, beta... and their lines)."),
    world_size: int = typer.Option(1, "--world-size", help="With --config: the run's data-parallel processes (the "
                                   "rows behind a flagged step are replayed on each)."),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="Tokenizer folder: its vocabulary size bounds "
                                          "the loss (RN007)."),
    vocab_size: int | None = typer.Option(None, "--vocab-size", help="Vocabulary size for RN007."),
    gpu: str | None = typer.Option(None, "--gpu", help="The GPU the run trained on (H100-80GB, A100-40GB, ...): its "
                                   "logged peak memory is judged against it (RN042)."),
    gpu_memory: float | None = typer.Option(None, "--gpu-memory", help="The GPU's GiB, instead of --gpu."),
    model: str | None = typer.Option(None, "--model", help="With --config: the model folder (or its config.json) "
                                     "mldebug memory's estimate reads, that the logged peak memory is compared with "
                                     "(RN051; default: the config's model)."),
    log_format: str | None = typer.Option(None, "--format", help=runlog_formats.format_help()),
    run_id: str | None = typer.Option(None, "--run-id", help="MLflow: the run to read (an id, its prefix or the run "
                                      "name; default: the newest)."),
    compare: Path | None = typer.Option(None, "--compare", help="Another run (any format above): where the two "
                                        "runs' loss, eval loss, grad norm and LR part (RN049), and whether their final "
                                        "eval losses differ by more than noise (RN050)."),
    align: str = typer.Option("step", "--align", help="With --compare: step, tokens (the tokens seen each run "
                              "logs: num_input_tokens_seen or num_tokens), or time (the seconds since each run's "
                              "first logged step: W&B, TensorBoard and MLflow logs record them), or samples (the "
                              "logged epoch: the share of the training set seen, for runs over the same dataset)."),
    watch: bool = typer.Option(False, "--watch", help="Follow a running job's log and print new findings."),
    fail_fast: bool = typer.Option(False, "--fail-fast", help="With --watch: exit 1 at the first error."),
    interval: float = typer.Option(10.0, "--interval", help="With --watch: seconds between reads."),
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
) -> None:
    """Check a training run's logged metrics: NaN, zero or spiking loss, overfitting, RL and DPO failure signs."""
    from mldebug_cli.pipelines.check_run import build_report

    def build(run_log=None):
        return build_report(
            run_path=str(run),
            fmt=log_format,
            config=None if config is None else str(config),
            run_id=run_id,
            tokenizer=None if tokenizer is None else str(tokenizer),
            vocab_size=vocab_size,
            select=split_list(select),
            ignore=split_list(ignore),
            thresholds=load_settings().thresholds,
            run=run_log,
            world_size=world_size,
            gpu=gpu,
            gpu_memory=gpu_memory,
            compare=None if compare is None else str(compare),
            align=align,
            model=model,
        )

    if watch:
        from mldebug_cli.sources.runlog.follow import Follower

        with errors_exit():  # a wrong interval, path or format is exit 2, not a silent wait
            _check_interval(interval)
            follower = Follower(run, log_format, run_id)
        _watch(lambda: build(follower.poll()), run, interval, fail_fast)
    run_report(build, OutputOptions(output_format, output, fail_on, color, exit_zero))


MAX_INTERVAL = 86_400.0  # a day between reads
GONE_READS = 3  # reads in a row that find no log before the watch ends (a writer replacing it takes far less)


def _check_interval(interval: float) -> None:
    from mldebug_cli.core.errors import UsageError

    if not (0 <= interval <= MAX_INTERVAL):  # also refuses nan
        raise UsageError(f"--interval must be a number of seconds from 0 to {MAX_INTERVAL:,.0f}, got {interval}")


def _watch(build, run: Path, interval: float, fail_fast: bool) -> None:
    """Read what the log gained whenever it changes; print each new finding once; stop at the first error with
    fail_fast. A finding is new when its check, metric and first step are (a growing range is not new)."""
    from mldebug_cli.core.errors import InputError
    from mldebug_cli.core.exit import ExitCode
    from mldebug_cli.core.findings import Severity
    from mldebug_cli.formats.locations import describe

    seen: set[tuple] = set()
    stamp = None
    first = True
    missing = 0
    try:
        while True:
            if not run.exists():  # deleted, or between a writer's delete and its new file: wait a little
                missing += 1
                if missing >= GONE_READS:
                    with errors_exit():
                        raise InputError(f"{run}: the log is gone ({GONE_READS} reads in a row found no file); "
                                         "the watch ends")
                time.sleep(interval)
                continue
            missing = 0
            kind = _not_regular(run)
            if kind is not None:  # replaced by a FIFO or a link to /dev/zero: never waited on, never read
                with errors_exit():
                    raise InputError(f"{run}: not a regular file ({kind}); the watch ends")
            current = _stamp(run)
            if current != stamp:
                stamp = current
                try:
                    report = build()
                except Exception as exc:
                    if first:  # the first read must work: a wrong path is exit 2, not a silent wait
                        with errors_exit():
                            raise
                    print_error(exc)  # a file caught mid-rewrite: say so and read again next time
                    report = None
                first = False
                for finding in report.findings if report else ():
                    key = (finding.code, finding.location.key, finding.location.step if finding.code != Code.RUN_INCOMPLETE else None,
                           finding.message if finding.code == Code.LOG_IRREGULAR else None)  # each repair note once (a restart)
                    if key in seen:
                        continue
                    seen.add(key)
                    sys.stdout.write(_watch_line(f"{finding.severity.value} {finding.code} {finding.name}: {describe(finding)}"))
                    sys.stdout.flush()
                    if fail_fast and finding.severity == Severity.ERROR:
                        raise typer.Exit(ExitCode.FINDINGS)
            time.sleep(interval)
    except KeyboardInterrupt:
        return  # Ctrl-C: fall through to the full report of what was read last


def _watch_line(text: str) -> str:
    """One finding of --watch as a line of text output: control characters visible, no workflow command."""
    from mldebug_cli.core.escape import no_workflow_commands, under_github_actions, visible

    line = visible(" ".join(text.splitlines())) + "\n"
    return no_workflow_commands(line) if under_github_actions() else line


def _not_regular(run: Path) -> str | None:
    """What ``run`` is (symlinks followed) when it is neither a regular file nor a folder: a FIFO, a device, ..."""
    import stat

    try:
        mode = run.stat().st_mode
    except OSError:
        return None  # gone between the two looks: the next round counts it
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
            stat.S_IFSOCK: "a socket"}.get(stat.S_IFMT(mode), "not a file")


def _stamp(run: Path) -> tuple:
    """What changes when the log does: each file's identity (a replacement has another inode), time and size."""
    paths = [run] if run.is_file() else sorted(p for p in run.rglob("*") if p.is_file())
    stamps = []
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue
        stamps.append((str(path), st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(stamps)
