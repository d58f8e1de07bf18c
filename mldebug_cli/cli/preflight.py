"""`mldebug preflight CONFIG`: every check a training config implies, as one CI step."""

from __future__ import annotations

import sys
from dataclasses import replace
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
    RayAddressOpt,
    RayConcurrencyOpt,
    SelectOpt,
    configs_for,
    configured_versions,
    frameworks_for,
    split_list,
    version_flags,
)
from mldebug_cli.frameworks.registry import PREFLIGHT_NEEDS


@version_flags
def preflight(
    config: Path = typer.Argument(..., help=f"A training config ({configs_for(*PREFLIGHT_NEEDS)}; YAML or JSON)."),
    deploy: list[str] | None = typer.Option(None, "--deploy", help="A deploy artefact to compare templates with (GGUF, Modelfile, .jinja, tokenizer folder); repeatable."),
    tokenizer: str | None = typer.Option(None, "--tokenizer", "-t", help="Use this tokenizer folder instead of the config's model."),
    framework: str | None = typer.Option(None, "--framework", help=f"{frameworks_for(*PREFLIGHT_NEEDS)} (default: detected from the keys)."),
    sample: int | None = typer.Option(None, "--sample", help="Check N rows of each dataset, evenly spaced (default 200)."),
    all_rows: bool = typer.Option(False, "--all", help="Check every row of every dataset."),
    engine: str = typer.Option("local", "--engine", help="local (this machine) or ray: the datasets' rows checked on "
                               "a Ray cluster with Ray Data (pip install 'mldebug[ray]'); the same report."),
    ray_address: str | None = RayAddressOpt,
    ray_concurrency: int | None = RayConcurrencyOpt,
    world_size: int = typer.Option(1, "--world-size", help="Processes the run trains on (for the step count)."),
    task: str | None = typer.Option(None, "--task", help="sft, dpo, kto, orpo or grpo: the trainer the config is for (default: from its keys, axolotl's rl or LLaMA-Factory's stage)."),
    reward_columns: list[str] | None = typer.Option(None, "--reward-columns", help="GRPO: columns the reward functions read, besides those of TRL's own reward functions the config names."),
    allow_outside_paths: bool = AllowOutsidePathsOpt,
    model: str | None = typer.Option(None, "--model", help="A model folder with config.json for the GPU memory estimate (default: the config's model, when its config.json is local)."),
    gpu: str | None = typer.Option(None, "--gpu", help="Judge the memory estimate against this GPU (H100-80GB, A100-40GB, ...)."),
    gpu_memory: float | None = typer.Option(None, "--gpu-memory", help="Judge the memory estimate against this many GiB per GPU."),
    target_versions: dict[str, str | None] | None = None,  # one --<package>-version flag per framework package
    sarif: Path | None = typer.Option(None, "--sarif", help="Also write SARIF 2.1.0 to FILE."),
    junit: Path | None = typer.Option(None, "--junit", help="Also write JUnit XML to FILE."),
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
    online: bool = OnlineOpt,
) -> None:
    """Run the data, schedule and template checks a training config implies; exit 1 on findings."""
    from mldebug_cli.cli.common import errors_exit, refuse_argument_inputs, run_report
    from mldebug_cli.pipelines.preflight import PreflightOptions, build_report

    options = PreflightOptions(
        config=str(config),
        deploy=tuple(deploy or ()),
        tokenizer=tokenizer,
        framework=framework,
        sample=sample,
        all_rows=all_rows,
        engine=engine,
        ray_address=ray_address,
        ray_concurrency=ray_concurrency,
        world_size=world_size,
        task=task,
        reward_columns=tuple(split_list(reward_columns)),
        select=tuple(split_list(select)),
        ignore=tuple(split_list(ignore)),
        allow_outside_paths=allow_outside_paths,
        model=model,
        gpu=gpu,
        gpu_memory=gpu_memory,
        target_versions=target_versions or {},
    )
    extra = [(fmt, path) for fmt, path in (("sarif", sarif), ("junit", junit)) if path is not None]

    def build():
        report = build_report(replace(options, configured_versions=configured_versions()), _progress())
        for fmt, path in extra:
            _write(report, fmt, path)
        return report

    with errors_exit():
        refuse_argument_inputs({f"--{fmt}": path for fmt, path in extra})
    run_report(build, OutputOptions(output_format, output, fail_on, color, exit_zero))


def _write(report, fmt: str, path: Path) -> None:
    from mldebug_cli.cli.common import write_report
    from mldebug_cli.formats import render_report

    write_report(path, lambda stream: render_report(report, fmt, stream, color=False), flag=f"--{fmt}")


def _progress():
    """One line per stage on stderr when it is a terminal."""
    if not sys.stderr.isatty():
        return None
    return lambda stage: sys.stderr.write(f"mldebug preflight: {stage}\n")
