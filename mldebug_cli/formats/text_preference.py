"""The inspect-data text section for DPO/KTO/GRPO rows: the shared prompt once, then each side's tokens and labels
(the first token where chosen and rejected differ marked), and the preference summary."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.formats.text_rows import MASKED_STYLE, PROMPT_LIMIT, TRAINED_STYLE, visible

TOKEN_LIMIT = 2000
DIFF_STYLE = "bold reverse magenta"


def render_details(report, console) -> None:
    for row in report.details.get("rows", []):
        render_row(row, console)
    _render_summary(report.summary, console)


def render_row(row: dict[str, Any], console) -> None:
    head = Text(f"row {row['row']}", style="bold")
    if row.get("line") is not None:
        head.append(f" (line {row['line']})")
    head.append(f" · {row['task']}", style="dim")
    if row.get("prompt_tokens") is not None:
        head.append(f" · prompt {row['prompt_tokens']} tokens", style="dim")
    if row.get("first_difference") is not None:
        head.append(f" · chosen and rejected differ from token {row['first_difference']}", style="dim")
    if row.get("dropped"):
        head.append(" · dropped by the trainer", style="red")
    console.rule(head, align="left")
    if row.get("error"):
        console.print(Text(f"  not prepared: {row['error']}", style="red"))
        return
    if row["task"] != "grpo":  # a GRPO row is its prompt: the token line below shows it
        console.print(Text("Prompt" + (" (shared)" if "chosen" in row else ""), style="underline"))
        prompt = row["prompt"]
        shown = Text(visible(prompt[:PROMPT_LIMIT]))
        if len(prompt) > PROMPT_LIMIT:
            shown.append(f" … {len(prompt) - PROMPT_LIMIT:,} more characters", style="dim")
        console.print(shown)
    color = bool(console.color_system)
    for title, side in sides(row):
        console.print()
        console.print(_side_head(title, side))
        skip = prompt_part(side) if row["task"] != "grpo" else 0
        console.print(_tokens(side, row.get("first_difference") if "chosen" in row else None, color, skip))
    console.print()


def sides(row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(title, {input_ids, labels, pieces, texts}) for each sequence a row shows."""
    if "chosen" in row and row.get("unpaired"):  # KTO: each side trains as a row of its own
        return [(f"{side} → {'desirable' if row[side].get('label') else 'undesirable'} row"
                 + (" (dropped by the trainer)" if row[side].get("dropped") else ""), row[side])
                for side in ("chosen", "rejected")]
    if "chosen" in row:
        return [("chosen", row["chosen"]), ("rejected", row["rejected"])]
    if "label" in row:
        return [(f"completion ({'desirable' if row['label'] else 'undesirable'})", row)]
    ids = row.get("prompt_input_ids") or []
    return [("prompt tokens (generation starts after them)",
             {"input_ids": ids, "labels": [IGNORE_INDEX] * len(ids), "texts": row.get("prompt_texts")})]


def prompt_part(side: dict[str, Any]) -> int:
    """How many leading tokens are masked prompt (shown once above)."""
    labels = side.get("labels") or []
    return next((pos for pos, label in enumerate(labels) if label != IGNORE_INDEX), len(labels))


def _side_head(title: str, side: dict[str, Any]) -> Text:
    labels = side.get("labels") or []
    trained = sum(1 for label in labels if label != IGNORE_INDEX)
    head = Text(title, style="underline")
    head.append(f" · {len(side.get('input_ids') or [])} tokens · {trained} trained", style="dim")
    if side.get("truncated_from"):
        head.append(f" · truncated from {side['truncated_from']}", style="yellow")
    return head


def _tokens(side: dict[str, Any], marked: int | None, color: bool, skip: int) -> Text:
    """The side's tokens after the ``skip`` prompt tokens, trained ones green (or between ⟦ ⟧ without colour), the
    first token where chosen and rejected differ marked ▶."""
    text = Text(f"({skip} prompt tokens, as above) " if skip else "", style="dim")
    texts = side.get("texts") or side.get("pieces") or [str(i) for i in side.get("input_ids") or []]
    trained_open = False
    for pos, (piece, label) in enumerate(zip(texts[:TOKEN_LIMIT], side.get("labels") or [])):
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


def _render_summary(summary: dict[str, Any], console) -> None:
    console.print(Text("Summary", style="bold underline"))
    console.print(Text(f"  {summary.get('rows_checked')} rows checked of {summary.get('rows')}"))
    if summary.get("pairs"):
        console.print(Text(f"  {summary['pairs']} pairs, chosen/rejected completion length ratio "
                           f"{summary['chosen_rejected_length_ratio']}, chosen longer in "
                           f"{100 * summary['chosen_longer_share']:.0f}% of pairs"))
    labels = summary.get("labels") or {}
    if any(labels.values()):
        console.print(Text(f"  KTO labels: {labels['desirable']} desirable, {labels['undesirable']} undesirable"))
    console.print()
