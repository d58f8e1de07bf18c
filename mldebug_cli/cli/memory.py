"""`mldebug memory`: will a training config fit in GPU memory on its real data, and which change makes it fit."""

from __future__ import annotations

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
    run_report,
    split_list,
)


def memory(
    config: Path = typer.Argument(..., help=f"The training config ({configs_for('trainer')}; YAML or JSON)."),
    model: str | None = typer.Option(None, "--model", help="A model folder with config.json (default: the config's "
                                     "model, as a folder or in the local hub cache)."),
    gpu: str | None = typer.Option(None, "--gpu", help="Judge against this GPU: H100-80GB, A100-40GB, L4-24GB, ... "
                                   "(default: a table of common GPUs)."),
    gpu_memory: float | None = typer.Option(None, "--gpu-memory", help="Judge against this many GiB per GPU."),
    world_size: int = typer.Option(1, "--world-size", help="GPUs (data-parallel processes); ZeRO/FSDP shard over them."),
    framework: str | None = typer.Option(None, "--framework", help=f"{frameworks_for('trainer')} "
                                         "(default: detected)."),
    sample: int | None = typer.Option(None, "--sample", help="Read this many rows, evenly spaced (default: all)."),
    host_memory: float | None = typer.Option(None, "--host-memory", help="GiB of RAM of the training node "
                                             "(default: this machine's)."),
    allow_outside_paths: bool = AllowOutsidePathsOpt,
    transformers_version: str | None = typer.Option(None, "--transformers-version", help="The transformers the run "
                                                    "uses (default: pinned beside the config, else installed); up to "
                                                    "4.45 the model's own loss keeps an fp32 copy of the logits."),
    output_format: str = OutputFormatOpt,
    output: Path | None = OutputOpt,
    fail_on=FailOnOpt,
    select: list[str] | None = SelectOpt,
    ignore: list[str] | None = IgnoreOpt,
    color=ColorOpt,
    exit_zero: bool = ExitZeroOpt,
) -> None:
    """Estimate the GPU memory of a training config on its data, term by term (MEM001-MEM007)."""
    from mldebug_cli.pipelines.memory import MemoryOptions, build_report
    from mldebug_cli.pipelines.preflight import PreflightOptions, config_steps, memory_lengths

    def steps(options: MemoryOptions) -> str:  # the count lr-plot and preflight print for this config
        return config_steps(PreflightOptions(config=options.config, framework=options.framework,  # as resolved
                                             world_size=options.world_size,
                                             allow_outside_paths=options.allow_outside_paths))

    def build():
        return build_report(MemoryOptions(
            config=str(config), model=model, gpu=gpu, gpu_memory=gpu_memory, world_size=world_size,
            framework=framework, sample=sample, select=tuple(split_list(select)), ignore=tuple(split_list(ignore)),
            host_memory=host_memory, allow_outside_paths=allow_outside_paths,
            transformers_version=transformers_version,
        ), read_lengths=memory_lengths, count_steps=steps)

    run_report(build, OutputOptions(output_format, output, fail_on, color, exit_zero))
