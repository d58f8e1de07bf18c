"""inspect-data: the summary with a length histogram, then each shown row as its prompt and token chips."""

from __future__ import annotations

import re

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.labels import IGNORE_INDEX
from mldebug_cli.core.numbers import plural
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary, PairView
from mldebug_cli.core.sections.preflight import PartView
from mldebug_cli.core.sections.rows import LengthHistogram, RowsSection, RowsSummary, RowView
from mldebug_cli.formats.html_parts import svg
from mldebug_cli.formats.html_parts.findings import SEVERITY_ORDER, Anchors, badges
from mldebug_cli.formats.html_parts.markup import Html, clip, el, facts_list, join, void
from mldebug_cli.formats.html_parts.text_view import cut_note, highlighted, visible
from mldebug_cli.formats.text_preference import sides

NAV = (("summary", "Summary"), ("rows", "Rows"))
MAX_ROWS = 50
MAX_PROMPT_CHARS = 20_000  # per row
MAX_PROMPT_CHARS_TOTAL = 80_000  # over all the rows of one report
MAX_TOKENS_PER_ROW = 4_000
MAX_TOKENS = 20_000  # chips over all the rows of one report
# A token whose piece looks like a control token (<|im_end|>, <s>, <start_of_turn>, [INST]); byte tokens excluded.
_SPECIAL_PIECE = re.compile(r"<(?!0x[0-9A-Fa-f]{2}>)[^<>\s]{1,64}>|\[/?[A-Z_]{2,32}\]")


def row_anchor(prefix: str, row: int) -> str:
    return f"{prefix}-row-{row}"


def anchors(part: PartView, prefix: str) -> Anchors:
    rows = _rows_of(part)
    return Anchors(rows={r.row: row_anchor(prefix, r.row) for r in rows[:MAX_ROWS]})


def render(part: PartView, prefix: str, findings: list[Finding]) -> Html:
    if not part.summary:
        summary = None
    elif PairsSummary.describes(part.summary):
        summary = _preference_summary(PairsSummary.from_dict(part.summary), prefix)
    else:
        summary = _summary(RowsSummary.from_dict(part.summary), prefix)
    return join([summary, _rows(_rows_of(part), prefix, findings)])


def _rows_of(part: PartView) -> tuple[RowView | PairView, ...]:
    if PairsSummary.describes(part.summary):
        return PairsSection.from_details(part.details).rows
    return RowsSection.from_details(part.details).rows


def _summary(summary: RowsSummary, prefix: str) -> Html:
    tokens, trained = summary.tokens, summary.trainable_tokens
    pct = summary.length_percentiles
    facts = [
        ("rows checked", f"{summary.rows_checked:,} of {summary.rows:,}"),
        ("rows not rendered", summary.rows_failed or None),
        ("tokens", f"{tokens:,}, {trained:,} trained ({100 * summary.trainable_fraction:.1f}%)"),
        ("length p50 / p90 / p99 / max", f"{pct.p50} / {pct.p90} / {pct.p99} / {pct.max}" if pct else None),
        ("max length", summary.max_length),
        ("rows truncated", summary.rows_truncated if summary.max_length else None),
        ("rows dropped by the trainer", summary.rows_dropped or None),
    ]
    return el("section", el("h2", "Summary"), facts_list(facts),
              _histogram(summary.length_histogram, summary.max_length),
              class_="summary", id=f"{prefix}-summary")


def _preference_summary(summary: PairsSummary, prefix: str) -> Html:
    share = summary.chosen_longer_share
    facts = [
        ("rows checked", f"{summary.rows_checked:,} of {summary.rows:,}"),
        ("pairs", summary.pairs or None),
        ("chosen/rejected completion length ratio", summary.chosen_rejected_length_ratio),
        ("chosen longer in", f"{100 * share:.0f}% of pairs" if share is not None else None),
        ("KTO labels", f"{summary.desirable} desirable, {summary.undesirable} undesirable"
         if summary.desirable or summary.undesirable else None),
    ]
    return el("section", el("h2", "Summary"), facts_list(facts), class_="summary", id=f"{prefix}-summary")


def _histogram(histogram: LengthHistogram | None, max_length: int | None) -> Html:
    if histogram is None:
        return el("p", "No length histogram in this report.", class_="cut")
    counts, width = histogram.counts, histogram.bin_width
    top = len(counts) * width
    frame = svg.Frame(680, 190, 0, top, 0, max(counts))
    bars = [_bar(frame, i * width, width, n) for i, n in enumerate(counts) if n]
    limit = svg.vertical_marker(frame, max_length, f"max length {max_length}", "limit") if max_length else None
    axes = svg.axes(frame, svg.nice_ticks(0, top), svg.nice_ticks(0, max(counts), 4), _int, _int,
                    "tokens per row (before truncation)", "rows")
    return el("figure", svg.chart(frame, axes, el("g", bars, class_="bars"), limit,
                                  label="Row lengths in tokens", class_="chart histogram"),
              el("figcaption", "Row lengths in tokens" + (f", against max length {max_length}" if max_length else "")))


def _bar(frame: svg.Frame, start: int, width: int, count: int) -> Html:
    x0, x1, y = frame.x(start), frame.x(start + width), frame.y(count)
    title = f"{start}–{start + width - 1} tokens: {plural(count, 'row')}"
    return el("rect", el("title", title), x=svg.num(x0), y=svg.num(y), width=svg.num(max(x1 - x0 - 1, 1)),
              height=svg.num(frame.floor - y), class_="bar", data_count=count)


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _rows(rows: tuple[RowView | PairView, ...], prefix: str, findings: list[Finding]) -> Html:
    by_row: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.location.row is not None:
            by_row.setdefault(finding.location.row, []).append(finding)
    tokens_left, chars_left = MAX_TOKENS, MAX_PROMPT_CHARS_TOTAL
    articles = []
    for row in rows[:MAX_ROWS]:
        tokens, chars = min(MAX_TOKENS_PER_ROW, tokens_left), min(MAX_PROMPT_CHARS, chars_left)
        articles.append(_row(row, prefix, by_row.get(row.row, []), tokens, chars))
        tokens_left -= min(tokens, _own_tokens(row))
        chars_left -= min(chars, len(row.prompt))
    intro = ("Flagged rows first, then clean ones (--show N sets how many, --rows picks them). "
             "Tokens are coloured trained or masked; hover a token for its id and label.")
    return el("section", el("h2", f"Rows ({len(rows)} shown)"), el("p", intro, class_="meta"), articles,
              cut_note("rows", len(rows) - MAX_ROWS, " (the page shows at most 50; --output-format json has them all)"),
              class_="rows", id=f"{prefix}-rows")


def _own_tokens(row: RowView | PairView) -> int:
    """The tokens a row's own chips count against the page's allowance (a pair's sides are not counted; a KTO
    completion, the row's own keys in JSON, is)."""
    if isinstance(row, RowView):
        return len(row.input_ids)
    completion = row.side("completion")
    return len(completion.input_ids) if completion is not None else 0


def _row(row: RowView | PairView, prefix: str, findings: list[Finding], tokens: int, chars: int) -> Html:
    """One row; ``tokens`` and ``chars`` are how many chips and prompt characters it may still show."""
    flagged = any(SEVERITY_ORDER[f.severity] <= 1 for f in findings)
    if row.error:
        body = [el("p", "Dropped by the trainer: " if row.dropped else "Not rendered: ", row.error, class_="error-text")]
    elif isinstance(row, PairView):
        body = _preference_body(row, tokens, chars)
    else:
        body = [el("h4", "Rendered prompt"), _prompt(row.prompt, special_spans(row), chars), el("h4", "Tokens"),
                _legend(), _chips(row, tokens)]
        if row.images:
            body[:0] = [el("h4", "Images"), el("ul", [el("li", image.describe()) for image in row.images],
                                               class_="images")]
    meta = _preference_meta(row) if isinstance(row, PairView) else _row_meta(row)
    side = row.side if isinstance(row, RowView) else None  # a vision preference row: one article per side
    anchor = row_anchor(prefix, row.row) + (f"-{side}" if side == "rejected" else "")
    return el("article", el("h3", f"row {row.row} " + (f"{side} " if side else ""), meta, badges(findings, prefix)),
              body, class_="row flagged" if flagged else "row", id=anchor, data_row=row.row)


def _preference_body(row: PairView, tokens: int, chars: int) -> list[Html]:
    """The prompt once, then each side's tokens (the prompt tokens too: truncation may cut them), the first token
    where chosen and rejected differ outlined."""
    body = [] if row.task == "grpo" else [el("h4", "Prompt (shared)" if row.paired else "Prompt"),
                                          _prompt(row.prompt, [], chars)]
    body.append(_legend())
    marked = row.first_difference if row.paired else None
    for title, side in sides(row):
        texts = list(side.texts or [])
        chips_row = RowView(row.row, "".join(texts), side.input_ids, side.labels, side.pieces or texts,
                            _offsets(texts))
        note = f" · {len(side.input_ids)} tokens · {side.trained} trained" + (
            f" · truncated from {side.truncated_from}" if side.truncated_from else "")
        body += [el("h4", title, el("span", note, class_="meta")), _chips(chips_row, tokens, marked)]
    return body


def _offsets(texts: list[str]) -> list[tuple[int, int]]:
    out, at = [], 0
    for text in texts:
        out.append((at, at + len(text)))
        at += len(text)
    return out


def _preference_meta(row: PairView) -> Html:
    parts = [f"line {row.line}" if row.line is not None else None, row.task,
             f"prompt {row.prompt_tokens} tokens" if row.prompt_tokens is not None else None,
             f"chosen and rejected differ from token {row.first_difference}" if row.first_difference is not None
             else None,
             "dropped by the trainer" if row.dropped else None]
    return el("span", " · ".join(p for p in parts if p), class_="meta")


def _row_meta(row: RowView) -> Html:
    parts = [f"line {row.line}" if row.line is not None else None, f"{len(row.input_ids)} tokens",
             f"{row.trained} trained", f"masking: {row.masking}" if row.masking else None,
             f"truncated from {row.truncated_from} tokens" if row.truncated_from else None]
    return el("span", " · ".join(p for p in parts if p), class_="meta")


def _prompt(prompt: str, spans: list[tuple[int, int]], limit: int) -> Html:
    text, cut = clip(prompt, limit)
    shown = [(s, e) for s, e in spans if e <= len(text)]
    return join([el("pre", highlighted(text, shown, "special"), class_="prompt"),
                 cut_note("characters of the prompt", cut)])


def special_spans(row: RowView) -> list[tuple[int, int]]:
    """Where the prompt holds a control token, found from the tokens (text typed inside content splits into many)."""
    pieces = row.pieces or []
    if len(row.offsets) != len(pieces):
        return []
    spans = []
    for piece, (start, _end) in zip(pieces, row.offsets):
        if _SPECIAL_PIECE.fullmatch(piece) and row.prompt.startswith(piece, start):
            spans.append((start, start + len(piece)))
    return spans


def _legend() -> Html:
    return el("p", el("span", "trained", class_="tok t"), el("span", "masked (label -100)", class_="tok m"),
              el("span", "<|control|>", class_="tok m sp"), el("label", "show token ids", for_="show-ids"),
              class_="legend")


def _chips(row: RowView, allowance: int, marked: int | None = None) -> Html:
    ids, labels = row.input_ids, row.labels
    texts, pieces = covered_texts(row), _pieces(row)
    shown = min(len(ids), allowance)
    blocks = row.image_blocks()
    chips, pos = [], 0
    while pos < shown:
        label = labels[pos] if pos < len(labels) else IGNORE_INDEX
        if pos in blocks:  # an image's tokens: one chip
            image, end = blocks[pos]
            chips.append(_chip(pos, ids[pos], label, f"[image {image.index}: {plural(end - pos, 'token')}]", pieces[pos]))
            pos = end
            continue
        chips.append(_chip(pos, ids[pos], label, texts[pos], pieces[pos], pos == marked))
        pos += 1
    note = cut_note("tokens of this row", len(ids) - shown, " (the page keeps its size bounded; see --output-format json)")
    return join([el("div", chips, class_="chips"), note])


def _chip(pos: int, token_id: int, label: int, text: str, piece: str, marked: bool = False) -> Html:
    trained = label != IGNORE_INDEX
    classes = "tok t" if trained else "tok m"
    if _SPECIAL_PIECE.fullmatch(piece):
        classes += " sp"
    if marked:
        classes += " diff"
    title = f"#{pos} id {token_id} label {label} {text!r}" + (" (first token where chosen and rejected differ)" if marked else "")
    chip = el("span", visible(text, ends_line=False, newline=""), class_=classes, title=title, data_id=token_id)
    return join([chip, void("br")]) if text.endswith("\n") else chip


def _pieces(row: RowView) -> list[str]:
    """The token pieces, or the ids as text when the row has no pieces for them (pre-tokenized rows)."""
    pieces, ids = row.pieces or [], row.input_ids
    return list(pieces) if len(pieces) == len(ids) else [str(i) for i in ids]


def covered_texts(row: RowView) -> list[str]:
    """The prompt text each token covers (by offsets), or its piece when offsets are missing or empty."""
    pieces = _pieces(row)
    if len(row.offsets) != len(pieces):
        return list(pieces)
    return [row.prompt[s:e] if e > s else piece for piece, (s, e) in zip(pieces, row.offsets)]
