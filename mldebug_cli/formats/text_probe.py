"""probe's own text section: each term's push and gradient, the cosines, and the debugging map's row."""

from __future__ import annotations

import statistics

from rich.text import Text

from mldebug_cli.core.findings import Report

FINDINGS_FIRST = False


def render_details(report: Report, console) -> None:
    probe = report.details.get("probe", {})
    terms = probe.get("terms", [])
    if terms:
        console.print(Text("Loss terms", style="bold underline"))
        for term in terms:
            push = [p for p in term["push"] if p is not None]
            line = Text(f"  {term['name']} ×{term['weight']:g}: ", style="bold")
            line.append(f"gradient norm {_fmt(term['grad_norm'])}; push on its {term['metric']} median "
                        f"{_fmt(statistics.median(push) if push else None)} over {len(push)} rows")
            console.print(line)
        for pair in probe.get("cosines", []):
            console.print(Text(f"  cosine {pair['terms'][0]} · {pair['terms'][1]}: {_fmt(pair['cosine'])}"))
    update = probe.get("update_ratio")
    if update:
        console.print(Text(f"  update/parameter RMS at lr {update['learning_rate']:g}: median {_fmt(update['median'])}"))
    ablation = probe.get("ablation")
    if ablation:
        console.print(Text(f"  {ablation['steps']} steps, {ablation['metric']}: {_fmt(ablation['start'])} → "
                           f"{_fmt(ablation['with'])} with {ablation['term']}, {_fmt(ablation['without'])} without"))
    mapped = report.details.get("map")
    if mapped:
        console.print()
        console.print(Text("Where this run sits on the map", style="bold underline"))
        line = Text(f"  {mapped['when']}: ", style="bold")
        line.append(mapped["reading"])
        console.print(line)
    console.print()


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"
