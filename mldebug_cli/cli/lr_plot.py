"""`mldebug lr-plot`: the LR at every optimizer step, counted the way the framework counts."""

from __future__ import annotations

from pathlib import Path

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
    SelectOpt,
    configs_for,
    configured_versions,
    frameworks_for,
    run_report,
    split_list,
    version_flags,
)


@version_flags
def lr_plot(
    config: Path = typer.Option(..., "--config", "-c", help=f"A training config ({configs_for('schedule')}; "
                                "YAML or JSON)."),
    num_rows: int | None = typer.Option(None, "--num-rows", help="Training rows (before packing)."),
    dataset: str | None = typer.Option(None, "--dataset", help="Count the rows of this dataset file or folder."),
    world_size: int = typer.Option(1, "--world-size", help="Data-parallel processes."),
    framework: str | None = typer.Option(
        None, "--framework", help=f"{frameworks_for('schedule')} (default: detected)."
    ),
    trainer_state: Path | None = typer.Option(
        None, "--trainer-state", help="Overlay a real run's logged LR (trainer_state.json)."
    ),
    plot: Path | None = typer.Option(
        None, "--plot", help="Write the chart to OUT.png or OUT.svg (needs matplotlib)."
    ),
    allow_outside_paths: bool = AllowOutsidePathsOpt,
    builtin: bool = typer.Option(False, "--builtin-engine", help="Use the built-in formulas even when torch is there."),
    target_versions: dict[str, str | None] | None = None,  # one --<package>-version flag per framework package
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
    online: bool = OnlineOpt,
) -> None:
    """Simulate the LR schedule of a fine-tuning config and check it (LR001-LR015)."""
    from mldebug_cli.pipelines.preflight import PreflightOptions, measured_size
    from mldebug_cli.pipelines.schedule import build_report

    def measure():  # the config's own datasets, measured as preflight measures them: one step count for both
        return measured_size(PreflightOptions(
            config=str(config), framework=framework, world_size=world_size, allow_outside_paths=allow_outside_paths,
            target_versions=target_versions or {}, configured_versions=configured_versions()))

    def build():
        return build_report(
            config=str(config),
            num_rows=num_rows,
            dataset=dataset,
            world_size=world_size,
            framework=framework,
            trainer_state=None if trainer_state is None else str(trainer_state),
            plot=None if plot is None else str(plot),
            select=split_list(select),
            ignore=split_list(ignore),
            engine="builtin" if builtin else "auto",
            target_versions=target_versions,
            configured_versions=configured_versions(),
            measure=measure,
        )

    run_report(build, OutputOptions(output_format, output, fail_on, color, exit_zero))
