"""`mldebug probe`: why won't this metric move? The gradient chain on the config's own model and rows (GP001-GP011)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from mldebug_cli.cli.common import (
    AllowOutsidePathsOpt,
    ColorOpt,
    ExitZeroOpt,
    FailOnOpt,
    IgnoreOpt,
    OutputFormatOpt,
    OutputOpt,
    OutputOptions,
    SelectOpt,
    configs_for,
    frameworks_for,
    load_settings,
    run_report,
    split_list,
)


def probe(
    config: Path = typer.Argument(..., help=f"The training config ({configs_for('trainer')}; SFT, DPO/IPO, ORPO, "
                                  "KTO, GRPO)."),
    model: Path = typer.Option(..., "--model", help="The local base model folder (never downloaded)."),
    adapter: Path | None = typer.Option(None, "--adapter", help="A trained PEFT adapter folder to probe."),
    checkpoint: Path | None = typer.Option(None, "--checkpoint", help="A trainer checkpoint folder: its adapter or "
                                           "weights, optimizer.pt (GP006) and trainer_state.json."),
    rows: str | None = typer.Option(None, "--rows", help="Probe these rows, e.g. 0-7 or 3,10-12 (0-based; GRPO: lines of --rewards)."),
    sample: int | None = typer.Option(None, "--sample", help="Probe N rows evenly spaced over the dataset (default 8)."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    framework: str | None = typer.Option(None, "--framework", help="Whose trainer runs the config: "
                                         f"{frameworks_for('trainer')} (default: detected from its keys)."),
    rewards: Path | None = typer.Option(None, "--rewards", help="GRPO: a JSONL file, one line per prompt: "
                                        '{"prompt": ..., "completions": [...], "rewards": [...]}.'),
    steps: int = typer.Option(0, "--steps", help="Train K steps on the rows (with --ablate: K with and K without the term)."),
    ablate: str | None = typer.Option(None, "--ablate", help="A loss term to turn off for the second K steps (GP009), "
                                      "e.g. sft, sigmoid, odds_ratio, kl."),
    metric: str | None = typer.Option(None, "--metric", help="FILE:FUNCTION, your own metric: FUNCTION(outputs, batch) "
                                      "returns a tensor; d(metric)/d(param) per parameter group (GP010). Your file is "
                                      "imported only with this flag."),
    loss_term: list[str] | None = typer.Option(None, "--loss-term", help="FILE:FUNCTION, your own loss term (weight 1) "
                                               "beside the trainer's: FUNCTION(outputs, batch) returns a tensor "
                                               "(GP011; with GP004/GP005 against the others). Repeatable."),
    allow_outside_paths: bool = AllowOutsidePathsOpt,
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
) -> None:
    """Measure the gradient chain of a training config on its model and rows: saturated losses, parameters with no
    gradient, frozen new tokens, conflicting terms, optimizer inertia, update ratio, the first non-finite module."""
    from mldebug_cli.cli.inspect_data import parse_rows
    from mldebug_cli.pipelines.preflight import PreflightOptions, config_steps
    from mldebug_cli.pipelines.probe import ProbeOptions, build_report

    def optimizer_steps(options: ProbeOptions) -> str:  # the count lr-plot and preflight print for this config
        return config_steps(PreflightOptions(config=options.config, tokenizer=options.model,
                                             framework=options.framework,
                                             allow_outside_paths=options.allow_outside_paths))

    def build():
        options = ProbeOptions(
            config=str(config), model=str(model), adapter=str(adapter) if adapter else None,
            checkpoint=str(checkpoint) if checkpoint else None, rows=parse_rows(rows) if rows else None,
            sample=sample, device=device, steps=steps, ablate=ablate, framework=framework,
            rewards=str(rewards) if rewards else None, metric=metric, loss_terms=tuple(loss_term or ()),
            select=tuple(split_list(select)), ignore=tuple(split_list(ignore)),
            thresholds=load_settings().thresholds, allow_outside_paths=allow_outside_paths,
        )
        return build_report(options, _progress, optimizer_steps)

    run_report(build, OutputOptions(output_format, output, fail_on, color, exit_zero))


def _progress(stage: str) -> None:
    sys.stderr.write(f"mldebug probe: {stage}\n")
    sys.stderr.flush()
