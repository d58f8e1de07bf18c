"""The inspect-data text section for DPO/KTO/GRPO rows: the shared prompt once, then each side's tokens and labels
(the first token where chosen and rejected differ marked), and the preference summary."""

from __future__ import annotations

from rich.text import Text

from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary, PairView, SideView
from mldebug_cli.formats.text_rows import MASKED_STYLE, PROMPT_LIMIT, TRAINED_STYLE, visible

TOKEN_LIMIT = 2000
DIFF_STYLE = "bold reverse magenta"


def render_details(report, console) -> None:
    for row in PairsSection.from_details(report.details).rows:
        render_row(row, console)
    _render_summary(PairsSummary.from_dict(report.summary), console)


def render_row(row: PairView, console) -> None:
    head = Text(f"row {row.row}", style="bold")
    if row.line is not None:
        head.append(f" (line {row.line})")
    head.append(f" · {row.task}", style="dim")
    if row.prompt_tokens is not None:
        head.append(f" · prompt {row.prompt_tokens} tokens", style="dim")
    if row.first_difference is not None:
        head.append(f" · chosen and rejected differ from token {row.first_difference}", style="dim")
    if row.dropped:
        head.append(" · dropped by the trainer", style="red")
    console.rule(head, align="left")
    if row.error:
        console.print(Text(f"  not prepared: {row.error}", style="red"))
        return
    grpo = row.task == "grpo"
    if not grpo:  # a GRPO row is its prompt: the token line below shows it
        console.print(Text("Prompt" + (" (shared)" if row.paired else ""), style="underline"))
        shown = Text(visible(row.prompt[:PROMPT_LIMIT]))
        if len(row.prompt) > PROMPT_LIMIT:
            shown.append(f" … {len(row.prompt) - PROMPT_LIMIT:,} more characters", style="dim")
        console.print(shown)
    color = bool(console.color_system)
    for title, side in sides(row):
        console.print()
        console.print(_side_head(title, side))
        skip = side.prompt_part if not grpo else 0
        console.print(_tokens(side, row.first_difference if row.paired else None, color, skip))
    console.print()


def sides(row: PairView) -> list[tuple[str, SideView]]:
    """(title, side) for each sequence a row shows."""
    if row.paired and row.unpaired:  # KTO: each side trains as a row of its own
        return [(f"{side.name} → {'desirable' if side.label else 'undesirable'} row"
                 + (" (dropped by the trainer)" if side.dropped else ""), side) for side in row.sides]
    if row.paired:
        return [(side.name, side) for side in row.sides]
    if row.sides:
        side = row.sides[0]
        return [(f"completion ({'desirable' if side.label else 'undesirable'})", side)]
    return [("prompt tokens (generation starts after them)", row.prompt_side())]


def _side_head(title: str, side: SideView) -> Text:
    head = Text(title, style="underline")
    head.append(f" · {len(side.input_ids)} tokens · {side.trained} trained", style="dim")
    if side.truncated_from:
        head.append(f" · truncated from {side.truncated_from}", style="yellow")
    return head


def _tokens(side: SideView, marked: int | None, color: bool, skip: int) -> Text:
    """The side's tokens after the ``skip`` prompt tokens, trained ones green (or between ⟦ ⟧ without colour), the
    first token where chosen and rejected differ marked ▶."""
    text = Text(f"({skip} prompt tokens, as above) " if skip else "", style="dim")
    texts = side.texts or side.pieces or [str(i) for i in side.input_ids]
    trained_open = False
    for pos, (piece, label) in enumerate(zip(texts[:TOKEN_LIMIT], side.labels)):
        if pos < skip:
            continue
        is_trained = label != IGNORE_INDEX
        if not color and is_trained != trained_open:
            text.append("⟦" if is_trained else "⟧")
            trained_open = is_trained
        if pos == marked:
            text.append("▶", style=DIFF_STYLE)
        style = DIFF_STYLE if pos == marked else (TRAINED_STYLE if is_trained else MASKED_STYLE)
        text.append(visible(piece), style=style)
    if not color and trained_open:
        text.append("⟧")
    if len(texts) > TOKEN_LIMIT:
        text.append(f" … {len(texts) - TOKEN_LIMIT:,} more tokens (see --output-format json)", style="dim")
    return text


def _render_summary(summary: PairsSummary, console) -> None:
    console.print(Text("Summary", style="bold underline"))
    console.print(Text(f"  {summary.rows_checked} rows checked of {summary.rows}"))
    if summary.pairs:
        console.print(Text(f"  {summary.pairs} pairs, chosen/rejected completion length ratio "
                           f"{summary.chosen_rejected_length_ratio}, chosen longer in "
                           f"{100 * (summary.chosen_longer_share or 0):.0f}% of pairs"))
    if summary.desirable or summary.undesirable:
        console.print(Text(f"  KTO labels: {summary.desirable} desirable, {summary.undesirable} undesirable"))
    console.print()
