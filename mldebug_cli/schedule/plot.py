"""`--plot OUT.png|svg`: the simulated schedule (and a real run's logged LR) drawn with matplotlib."""

from __future__ import annotations

from pathlib import Path

from mldebug_cli.core.errors import InputError, UsageError
from mldebug_cli.core.safe_io import write_output
from mldebug_cli.schedule.model import Simulation

PLOT_SUFFIXES = (".png", ".svg")


def write_plot(sim: Simulation, out: str) -> str:
    path = Path(out)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise UsageError(f"--plot: {out} must end in .png or .svg")
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: never open a window
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("--plot needs matplotlib", hint="pip install 'mldebug[plot]'") from None
    figure, axes = plt.subplots(figsize=(9, 4.5), dpi=120)
    try:
        _draw(sim, axes)
        figure.tight_layout()
        write_output(path, lambda stream: figure.savefig(stream, format=path.suffix.lower()[1:]), flag="--plot", binary=True)
    except OSError as exc:
        raise InputError(f"--plot: cannot write {out} ({exc})") from None
    finally:
        plt.close(figure)
    return str(path)


def _draw(sim: Simulation, axes) -> None:
    steps = [p.step for p in sim.schedule]
    lrs = [p.lr for p in sim.schedule]
    axes.plot(steps, lrs, color="#1f77b4", label="simulated LR")
    if sim.schedule:
        peak = max(sim.schedule, key=lambda p: p.lr)
        final = sim.schedule[-1]
        axes.scatter([peak.step], [peak.lr], color="#d62728", zorder=3, label=f"peak {peak.lr:.3g} (step {peak.step})")
        axes.scatter([final.step], [final.lr], color="#2ca02c", zorder=3,
                     label=f"final {final.lr:.3g} (step {final.step})")
    warmup = sim.plan.warmup_steps
    if warmup and not sim.spec.scheduler.ignores_warmup:
        axes.axvline(warmup + 1, color="grey", linestyle="--", label=f"warmup end (step {warmup + 1})")
    if sim.overlay is not None:
        logged = sim.overlay.logged
        axes.scatter([p.step for p in logged], [p.lr for p in logged], s=10, color="#ff7f0e", label="logged LR")
    axes.set_xlabel("optimizer step")
    axes.set_ylabel("learning rate")
    axes.set_title(f"{sim.spec.framework} {sim.spec.scheduler.name}: {sim.plan.total_steps} optimizer steps")
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    accumulation = sim.spec.grad_accum
    micro = axes.secondary_xaxis("top", functions=(lambda s: s * accumulation, lambda m: m / accumulation))
    micro.set_xlabel("micro-batches per process (approx.: the last window of an epoch may be shorter)")
