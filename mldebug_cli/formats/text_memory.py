"""memory's own text section: the terms of the peak with their formulas, the verdict, the GPUs, the fixes."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from mldebug_cli.core.findings import Report
from mldebug_cli.core.sections.memory import MemorySection

GIB = 1024**3


def _g(n: float | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f} GiB"


def render_details(report: Report, console) -> None:
    d = MemorySection.from_details(report.details)
    if not d.terms or d.batch is None:
        return
    batch = d.batch
    where = f" at step {batch.step}" if batch.step else ""
    rows = f", rows {', '.join(str(r) for r in batch.rows[:8])}" if batch.rows else ""
    table = Table(title=f"GPU memory per GPU: peak batch {batch.sequences} × {batch.length:,} tokens{where}{rows}",
                  title_justify="left")
    table.add_column("term")
    table.add_column("GiB", justify="right")
    table.add_column("when")
    table.add_column("formula")
    for term in d.terms:
        table.add_row(Text(term.name), f"{term.gib:.2f}", Text(term.moment), Text(term.formula))
    console.print(table)
    moments = ", ".join(f"{name} {_g(v)}" for name, v in d.moments.items())
    console.print(Text(f"allocated at each moment: {moments}", style="dim"))
    line = Text("peak: ", style="bold")
    line.append(f"{_g(d.allocated)} allocated at {d.peak_moment}, {_g(d.per_gpu)} per GPU "
                "with the allocator's reserve and the CUDA context")
    console.print(line)
    if d.gpu_bytes:
        fits = d.per_gpu <= d.gpu_bytes
        verdict = Text("verdict: ", style="bold")
        verdict.append("fits" if fits else "does not fit", style="green" if fits else "bold red")
        verdict.append(f" on {d.gpu} ({_g(d.gpu_bytes)}, {d.per_gpu / d.gpu_bytes:.0%} used)")
        console.print(verdict)
    else:
        fit = [g.name for g in d.gpus if g.fits]
        console.print(Text(f"fits on: {', '.join(fit) if fit else 'none of the common GPUs'}"))
    if d.fixes:
        console.print(Text("fixes (each alone, in the order to try them):", style="bold"))
        for fix in d.fixes:
            mark = "" if fix.fits is None else (" ✓ fits" if fix.fits else "")
            note = f" ({fix.note})" if fix.note else ""
            console.print(Text(f"  {fix.change}: {_g(fix.before)} → {_g(fix.after)}{note}{mark}"))
    console.print()
