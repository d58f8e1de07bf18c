"""The inspect-data section of the text report: shown rows (prompt, coloured tokens, token table) and the summary."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.core.numbers import count, percent, plural
from mldebug_cli.core.sections.pairs import PairsSummary
from mldebug_cli.core.sections.rows import RowsSection, RowsSummary, RowView
from mldebug_cli.formats import text_preference
from mldebug_cli.formats.text_rows import MASKED_STYLE, PROMPT_LIMIT, TRAINED_STYLE, visible

TOKEN_TABLE_LIMIT = 400
COMPACT_LIMIT = 4000  # tokens in the coloured text view; the JSON report has every token


FINDINGS_FIRST = True  # the findings fit the first screen; the rows (long) follow them


def render_details(report, console) -> None:
    """The summary, then the shown rows, most serious first: each as its prompt with the trained text marked;
    the rendered prompt and the per-token table only when asked (--tokens, or --rows)."""
    if PairsSummary.describes(report.summary):  # DPO/KTO/GRPO rows
        text_preference.render_details(report, console)
        return
    _render_summary(RowsSummary.from_dict(report.summary) if report.summary else None, console)
    section = RowsSection.from_details(report.details)
    full, rows = section.token_table, section.rows
    for row in rows:
        render_row(row, console, full, report.findings)
    if rows and not full:
        console.print(Text("  --tokens adds each row's rendered prompt and per-token table; -f html or -f json has "
                           "every token of the rows shown (--show N, or --rows, picks them)", style="dim"))
        console.print()


def render_row(row: RowView, console, full: bool, findings: tuple[Finding, ...] = ()) -> None:
    """One shown row: a header naming its checks, the prompt with the trained text marked; with ``full`` also the
    rendered prompt and the per-token table."""
    head = Text(f"row {row.row}" + (f" {row.side}" if row.side else ""), style="bold")
    if row.line is not None:
        head.append(f" (line {row.line})")
    head.append(f" · {plural(len(row.input_ids), 'token')} · {count(row.trained)} trained", style="dim")
    if row.masking:
        head.append(f" · masking: {row.masking}", style="dim")
    if row.truncated_from:
        head.append(f" · truncated from {row.truncated_from}", style="yellow")
    codes = _codes_of_row(findings, row.row)
    if codes:
        head.append(f" · {', '.join(codes)}", style="yellow")
    console.rule(head, align="left")
    if row.error:
        said = "dropped by the trainer" if row.dropped else "not rendered"
        console.print(Text(f"  {said}: {row.error}", style="yellow" if row.dropped else "red"))
        return
    for image in row.images:
        console.print(Text(f"  {visible(image.describe())}", style="cyan"))
    if full:
        console.print(Text("Rendered prompt", style="underline"))
        prompt = row.prompt
        shown = Text(visible(prompt[:PROMPT_LIMIT]))
        if len(prompt) > PROMPT_LIMIT:
            shown.append(f" … {len(prompt) - PROMPT_LIMIT:,} more characters", style="dim")
        console.print(shown)
        console.print()
    console.print(Text("Prompt, trained in green, masked dim" if console.color_system else
                       "Prompt, trained text between ⟦ ⟧", style="underline"))
    console.print(_compact(row, bool(console.color_system)))
    console.print()
    if full:
        console.print(_table(row))
        console.print()


def _codes_of_row(findings: tuple[Finding, ...], index: int) -> list[str]:
    """The checks that flagged row ``index``, most severe first."""
    ranked: dict[str, int] = {}
    for f in findings:
        if f.location.row == index and f.location.side is None:  # a finding on another set's row (eval) is not this row's
            ranked[f.code] = max(ranked.get(f.code, 0), f.severity.rank)
    return sorted(ranked, key=lambda c: (-ranked[c], c))


def _compact(row: RowView, color: bool) -> Text:
    text = Text()
    trained_open = False
    pieces = row.flowing_texts()
    blocks = row.image_blocks()
    end = 0
    for pos, (piece_text, label) in enumerate(zip(pieces[:COMPACT_LIMIT], row.labels)):
        if pos < end:
            continue
        is_trained = label != IGNORE_INDEX
        if not color and is_trained != trained_open:
            text.append("⟦" if is_trained else "⟧")
            trained_open = is_trained
        if pos in blocks:
            image, end = blocks[pos]
            token = row.pieces[pos] if row.pieces else pieces[pos]  # the image's token (a wrapped image's text is its start)
            piece_text = f"[image {image.index}: {plural(end - pos, 'token')} {token}]"
        text.append(visible(piece_text), style=TRAINED_STYLE if is_trained else MASKED_STYLE)
    if not color and trained_open:
        text.append("⟧")
    if len(pieces) > COMPACT_LIMIT:
        text.append(f" … {len(pieces) - COMPACT_LIMIT:,} more tokens (see --output-format json)", style="dim")
    return text


def _table(row: RowView) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in ("pos", "id", "piece", "label"):
        table.add_column(name, justify="right" if name != "piece" else "left")
    rows = list(zip(row.input_ids, row.pieces or [], row.labels))
    blocks = row.image_blocks()
    end = 0
    for pos, (token_id, piece, label) in enumerate(rows[:TOKEN_TABLE_LIMIT]):
        if pos < end:
            continue
        style = TRAINED_STYLE if label != IGNORE_INDEX else MASKED_STYLE
        where = str(pos)
        if pos in blocks:  # an image's tokens: one line
            image, end = blocks[pos]
            where, piece = f"{pos}-{end - 1}", f"{piece} ×{end - pos} (image {image.index})"
        table.add_row(where, str(token_id), Text(repr(piece)[1:-1]), "-100" if label == IGNORE_INDEX else str(label), style=style)
    if len(rows) > TOKEN_TABLE_LIMIT:
        table.add_row("…", "", Text(f"{len(rows) - TOKEN_TABLE_LIMIT} more tokens (see --output-format json)"), "")
    return table


def _render_summary(summary: RowsSummary | None, console) -> None:
    if summary is None:
        return
    console.print(Text("Summary", style="bold underline"))
    line = Text(f"  {count(summary.rows_checked)} of {plural(summary.rows, 'row')} checked")
    if summary.rows_failed:
        line.append(f", {summary.rows_failed} could not be rendered", style="red")
    console.print(line)
    console.print(Text(f"  {plural(summary.tokens, 'token')}, {count(summary.trainable_tokens)} trained"
                       f" ({percent(summary.trainable_fraction)})"))
    pct = summary.length_percentiles
    if pct:
        against = f" against max length {summary.max_length}" if summary.max_length else ""
        console.print(Text(f"  length p50 {pct.p50}, p90 {pct.p90}, p99 {pct.p99}, max {pct.max}{against}"))
    if summary.max_length:
        console.print(Text(f"  {plural(summary.rows_truncated, 'row')} truncated"))
    if summary.rows_dropped:
        console.print(Text(f"  {plural(summary.rows_dropped, 'row')} dropped by the trainer (their tokens are not "
                           "counted above)", style="yellow"))
    console.print()
