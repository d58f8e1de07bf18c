"""probe's own text section: each term's push and gradient, the cosines, and the debugging map's row."""

from __future__ import annotations

import statistics

from rich.text import Text

from mldebug_cli.core.findings import Report
from mldebug_cli.core.sections.probe import ProbeSection

FINDINGS_FIRST = False
METRIC_GROUPS_SHOWN = 6


def render_details(report: Report, console) -> None:
    section = ProbeSection.from_details(report.details)
    if section.terms:
        console.print(Text("Loss terms", style="bold underline"))
        for term in section.terms:
            push = [p for p in term.push if p is not None]
            line = Text(f"  {term.name} ×{term.weight:g}: ", style="bold")
            if term.source is None:
                line.append(f"gradient norm {_fmt(term.grad_norm)}; push on its {term.metric} median "
                            f"{_fmt(statistics.median(push) if push else None)} over {len(push)} rows")
            else:  # the user's own term has no per-row metric: its value
                losses = [v for v in term.losses if v is not None]
                line.append(f"gradient norm {_fmt(term.grad_norm)}; value {_fmt(statistics.fmean(losses) if losses else None)}")
            console.print(line)
        for pair in section.cosines:
            console.print(Text(f"  cosine {pair.first} · {pair.second}: {_fmt(pair.cosine)}"))
    metric = section.metric
    if metric:
        console.print(Text(f"Metric {metric.source}", style="bold underline"))
        console.print(Text(f"  value {_fmt(metric.value)}; d(metric)/d(param) norm {_fmt(metric.grad_norm)} over all "
                           "trainable tensors; per parameter group, largest first:"))
        ranked = sorted(metric.groups, key=lambda g: -(g[2] or 0.0))
        for group, tensors, norm in ranked[:METRIC_GROUPS_SHOWN]:
            console.print(Text(f"    {group} ({tensors} tensors): {_fmt(norm)}"))
        if len(ranked) > METRIC_GROUPS_SHOWN:
            console.print(Text(f"    ... {len(ranked) - METRIC_GROUPS_SHOWN} more groups (all in --format json)"))
    update = section.update_ratio
    if update:
        console.print(Text(f"  update/parameter RMS at lr {update.learning_rate:g}: median {_fmt(update.median)}"))
    ablation = section.ablation
    if ablation:
        console.print(Text(f"  {ablation.steps} steps, {ablation.metric}: {_fmt(ablation.start)} → "
                           f"{_fmt(ablation.with_term)} with {ablation.term}, {_fmt(ablation.without_term)} without"))
    mapped = section.map
    if mapped:
        console.print()
        console.print(Text("Where this run sits on the map", style="bold underline"))
        line = Text(f"  {mapped.when}: ", style="bold")
        line.append(mapped.reading)
        console.print(line)
    console.print()


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
