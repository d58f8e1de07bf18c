"""The check-template section of the text report: each probe's verdict, its first differences and token ids."""

from __future__ import annotations

from rich.text import Text

from mldebug_cli.core.sections.probes import ProbesSection, ProbeView

MAX_HUNKS_SHOWN = 3
MAX_TOKEN_HUNKS_SHOWN = 3
CONTEXT = 20


def render_details(report, console) -> None:
    probes = ProbesSection.from_details(report.details).probes
    if not probes:
        return
    console.print(Text("Probes (train vs deploy; ↵ newline, · space, ⟨ ⟩ the difference)", style="bold underline"))
    for probe in probes:
        _render_probe(probe, console)
    console.print()


def _render_probe(probe: ProbeView, console) -> None:
    line = Text(f"  {probe.name:<22} ", style="bold")
    if probe.skipped:
        line.append(f"skipped: {probe.skipped}", style="dim")
    elif probe.deploy_error:
        line.append(f"deploy failed: {probe.deploy_error}", style="red")
    elif probe.identical:
        line.append("identical tokens", style="green")
    else:
        kinds = ", ".join(dict.fromkeys(h.kind or "" for h in probe.hunks)) or "text identical"
        count = len(probe.hunks)
        line.append(f"differs: {count} text difference{'s' if count != 1 else ''} ({kinds})", style="yellow")
    console.print(line)
    if not probe.differs:
        return
    for hunk in probe.hunks[:MAX_HUNKS_SHOWN]:
        console.print(_hunk_line("train ", probe.train or "", hunk.train_at, hunk.train, hunk.kind or ""))
        console.print(_hunk_line("deploy", probe.deploy or "", hunk.deploy_at, hunk.deploy, ""))
    for tokens in probe.token_differences[:MAX_TOKEN_HUNKS_SHOWN]:
        out = Text(f"      tokens @{tokens.train_at}: ", style="dim")
        out.append(" ".join(tokens.train) or "∅")
        out.append("  →  ", style="dim")
        out.append(" ".join(tokens.deploy) or "∅")
        console.print(out)


def _hunk_line(label: str, text: str, at: int, changed: str, kind: str) -> Text:
    before = text[max(0, at - CONTEXT) : at]
    after = text[at + len(changed) : at + len(changed) + CONTEXT]
    line = Text(f"      {label} ", style="dim")
    line.append(_visible(before))
    line.append("⟨", style="dim")
    line.append(_visible(changed), style="bold red" if label.startswith("train") else "bold green")
    line.append("⟩", style="dim")
    line.append(_visible(after))
    if kind:
        line.append(f"   [{kind}]", style="cyan")
    return line


def _visible(text: str) -> str:
    return text.replace("\n", "↵").replace("\t", "→").replace(" ", "·")
