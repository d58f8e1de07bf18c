"""The inspect-data section of the text report: shown rows (prompt, coloured tokens, token table) and the summary."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

IGNORE_INDEX = -100
TRAINED_STYLE = "bold green"
MASKED_STYLE = "dim"
TOKEN_TABLE_LIMIT = 400
COMPACT_LIMIT = 4000  # tokens in the coloured text view; the JSON report has every token
PROMPT_LIMIT = 20_000  # characters of the rendered prompt shown


def render_details(report, console) -> None:
    if "pairs" in report.summary:  # DPO/KTO/GRPO rows
        from mldebug_cli.formats import text_preference

        text_preference.render_details(report, console)
        return
    for row in report.details.get("rows", []):
        _render_row(row, console)
    _render_summary(report.summary, console)


def visible(text: str) -> str:
    """Whitespace made visible: newlines as ↵ (kept as line breaks), tabs as →, trailing spaces as ·."""
    lines = text.replace("\t", "→").split("\n")
    shown = [line[: len(line.rstrip(" "))] + "·" * (len(line) - len(line.rstrip(" "))) for line in lines]
    return "↵\n".join(shown)


def _render_row(row: dict[str, Any], console) -> None:
    head = Text(f"row {row['row']}", style="bold")
    if row.get("line") is not None:
        head.append(f" (line {row['line']})")
    ids, labels = row.get("input_ids", []), row.get("labels", [])
    trained = sum(1 for label in labels if label != IGNORE_INDEX)
    head.append(f" · {len(ids)} tokens · {trained} trained", style="dim")
    if row.get("masking"):
        head.append(f" · masking: {row['masking']}", style="dim")
    if row.get("truncated_from"):
        head.append(f" · truncated from {row['truncated_from']}", style="yellow")
    console.rule(head, align="left")
    if row.get("error"):
        console.print(Text(f"  not rendered: {row['error']}", style="red"))
        return
    console.print(Text("Rendered prompt", style="underline"))
    prompt = row["prompt"]
    shown = Text(visible(prompt[:PROMPT_LIMIT]))
    if len(prompt) > PROMPT_LIMIT:
        shown.append(f" … {len(prompt) - PROMPT_LIMIT:,} more characters", style="dim")
    console.print(shown)
    console.print()
    console.print(Text("Tokens (trained in green, masked dim)" if console.color_system else
                       "Tokens (trained text between ⟦ ⟧)", style="underline"))
    console.print(_compact(row, bool(console.color_system)))
    console.print()
    console.print(_table(row))


def _compact(row: dict[str, Any], color: bool) -> Text:
    text = Text()
    trained_open = False
    pieces = _piece_texts(row)
    for piece_text, label in zip(pieces[:COMPACT_LIMIT], row["labels"]):
        is_trained = label != IGNORE_INDEX
        if not color and is_trained != trained_open:
            text.append("⟦" if is_trained else "⟧")
            trained_open = is_trained
        text.append(visible(piece_text), style=TRAINED_STYLE if is_trained else MASKED_STYLE)
    if not color and trained_open:
        text.append("⟧")
    if len(pieces) > COMPACT_LIMIT:
        text.append(f" … {len(pieces) - COMPACT_LIMIT:,} more tokens (see --output-format json)", style="dim")
    return text


def _piece_texts(row: dict[str, Any]) -> list[str]:
    """The text each token covers: the prompt's characters by offsets when known, the token piece otherwise."""
    pieces = row.get("pieces") or []
    offsets = row.get("offsets") or []
    prompt = row.get("prompt", "")
    if len(offsets) != len(pieces):
        return list(pieces)
    return [prompt[s:e] if e > s else piece for piece, (s, e) in zip(pieces, offsets)]


def _table(row: dict[str, Any]) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("pos", "id", "piece", "label"):
        table.add_column(name, justify="right" if name != "piece" else "left")
    rows = list(zip(row["input_ids"], row.get("pieces", []), row["labels"]))
    for pos, (token_id, piece, label) in enumerate(rows[:TOKEN_TABLE_LIMIT]):
        style = TRAINED_STYLE if label != IGNORE_INDEX else MASKED_STYLE
        table.add_row(str(pos), str(token_id), Text(repr(piece)[1:-1]), "-100" if label == IGNORE_INDEX else str(label), style=style)
    if len(rows) > TOKEN_TABLE_LIMIT:
        table.add_row("…", "", Text(f"{len(rows) - TOKEN_TABLE_LIMIT} more tokens (see --output-format json)"), "")
    return table


def _render_summary(summary: dict[str, Any], console) -> None:
    if not summary:
        return
    console.print()
    console.print(Text("Summary", style="bold underline"))
    tokens = summary.get("tokens", 0)
    line = Text(f"  {summary.get('rows_checked')} rows checked of {summary.get('rows')}")
    if summary.get("rows_failed"):
        line.append(f", {summary['rows_failed']} could not be rendered", style="red")
    console.print(line)
    console.print(Text(f"  {tokens:,} tokens, {summary.get('trainable_tokens', 0):,} trained"
                       f" ({100 * summary.get('trainable_fraction', 0):.1f}%)"))
    pct = summary.get("length_percentiles") or {}
    if pct:
        against = f" against max length {summary['max_length']}" if summary.get("max_length") else ""
        console.print(Text(f"  length p50 {pct['p50']}, p90 {pct['p90']}, p99 {pct['p99']}, max {pct['max']}{against}"))
    if summary.get("max_length"):
        console.print(Text(f"  {summary.get('rows_truncated', 0)} rows truncated"))
    console.print()
