"""check-template: each probe's train and deploy prompts side by side, the differences highlighted.

The differences are the pipeline's own hunks (``probes[].hunks``: class, train_at/deploy_at, train/deploy
text), the same ones the findings count; a probe without hunks that still differs is diffed here.
"""

from __future__ import annotations

import difflib
import re

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.numbers import plural
from mldebug_cli.core.sections.preflight import PartView
from mldebug_cli.core.sections.probes import HunkView, ProbesSection, ProbeView, TokenDifferenceView
from mldebug_cli.formats.html_parts.findings import Anchors, badges
from mldebug_cli.formats.html_parts.markup import Html, clip, el, join, shorten
from mldebug_cli.formats.html_parts.text_view import cut_note, visible

NAV = (("probes", "Probes"),)
MAX_PROBES = 40
MAX_PROBE_CHARS = 20_000  # per side of a probe
MAX_PROBE_CHARS_TOTAL = 80_000  # over all the probes of one report
MAX_FINE_DIFF_CHARS = 4_000  # a changed block larger than this is marked whole, not diffed word by word
MAX_TOKEN_DIFFERENCES = 20
# Diff units: control-token-like tags whole, words, single newlines, runs of spaces, any other character.
_LEXEME = re.compile(r"<[^<>\s]{1,64}>|\[[A-Za-z_/]{1,32}\]|\w+|\n|[^\S\n]+|.", re.DOTALL)


def probe_anchor(prefix: str, index: int) -> str:
    return f"{prefix}-probe-{index}"


def anchors(part: PartView, prefix: str) -> Anchors:
    probes = ProbesSection.from_details(part.details).probes[:MAX_PROBES]
    return Anchors(probes={p.name: probe_anchor(prefix, i) for i, p in enumerate(probes)})


def render(part: PartView, prefix: str, findings: list[Finding]) -> Html:
    probes = ProbesSection.from_details(part.details).probes
    articles, chars_left = [], MAX_PROBE_CHARS_TOTAL
    for i, probe in enumerate(probes[:MAX_PROBES]):
        limit = min(MAX_PROBE_CHARS, chars_left // 2)
        articles.append(_probe(probe, i, prefix, findings, limit))
        chars_left -= sum(min(limit, len(side or "")) for side in (probe.train, probe.deploy))
    differing = sum(1 for p in probes if not p.identical and not p.skipped)
    return el("section", el("h2", f"Probes ({differing} of {len(probes)} differ)"),
              el("p", "Each probe conversation rendered by the training template (left) and the deployment "
                      "template (right); text only on one side is highlighted.", class_="meta"),
              articles, cut_note("probes", len(probes) - MAX_PROBES, " (see --output-format json)"),
              class_="probes", id=f"{prefix}-probes")


def _probe(probe: ProbeView, index: int, prefix: str, findings: list[Finding], limit: int) -> Html:
    name = probe.name
    mine = [f for f in findings if f.location.probe == name]
    return el("article",
              el("h3", "probe ", el("code", name), " ", _status(probe), badges(mine, prefix)),
              _body(probe, limit),
              class_="probe", id=probe_anchor(prefix, index), data_identical=str(probe.identical).lower())


def _status(probe: ProbeView) -> Html:
    if probe.skipped:
        return el("span", "skipped", class_="meta")
    if probe.identical:
        return el("span", "identical", class_="same")
    return el("span", "differs", class_="differs")


def _body(probe: ProbeView, limit: int) -> Html:
    train, deploy = probe.train, probe.deploy
    notes = [el("p", "Skipped: ", probe.skipped, class_="meta") if probe.skipped else None,
             el("p", "Deploy side failed: ", probe.deploy_error, class_="error-text") if probe.deploy_error else None]
    if train is None or deploy is None:
        columns = [_column("train", _plain(train, limit)), _column("deploy", _plain(deploy, limit))]
    else:
        left, right = _sides(str(train), str(deploy), probe.hunks, probe.identical, limit)
        columns = [_column("train", left), _column("deploy", right)]
    return join([notes, el("div", columns, class_="columns"), _token_differences(probe.token_differences)])


def _column(side: str, body: Html) -> Html:
    return el("div", el("h4", side), el("pre", body, class_=f"side {side}"))


def _plain(text: str | None, limit: int) -> Html:
    if text is None:
        return el("span", "(not rendered)", class_="meta")
    shown, cut = clip(text, limit)
    return join([visible(shown), cut_note("characters", cut)])


def _sides(train: str, deploy: str, hunks: tuple[HunkView, ...], identical: bool, limit: int) -> tuple[Html, Html]:
    """Both prompts made visible; text only in train is marked deleted, text only in deploy inserted."""
    train, train_cut = clip(train, limit)
    deploy, deploy_cut = clip(deploy, limit)
    if hunks:
        left = _marked_at(train, [(h.train_at, len(h.train), h.kind) for h in hunks], "del")
        right = _marked_at(deploy, [(h.deploy_at, len(h.deploy), h.kind) for h in hunks], "ins")
    elif identical:
        left, right = visible(train), visible(deploy)
    else:
        left, right = _diffed(train, deploy)
    return (join([left, cut_note("characters", train_cut)]), join([right, cut_note("characters", deploy_cut)]))


def _marked_at(text: str, spans: list[tuple[int, int, str | None]], css_class: str) -> Html:
    """``text`` with each (start, length, class) span marked; spans past the shown text are dropped."""
    parts: list[Html | None] = []
    pos = 0
    for start, length, kind in sorted(spans, key=lambda s: s[0]):
        if start < pos or start > len(text):
            continue
        end = min(start + length, len(text))
        parts.append(visible(text[pos:start], ends_line=False))
        parts.append(_marked(text[start:end], css_class, kind) if end > start else el("mark", "", class_=f"{css_class} gap", title=kind))
        pos = end
    parts.append(visible(text[pos:]))
    return join(parts)


def _diffed(train: str, deploy: str) -> tuple[Html, Html]:
    """A diff made here: lines matched first, then the lexemes of changed lines (bounded time on any input)."""
    left: list[Html | None] = []
    right: list[Html | None] = []
    for op, old, new in _diff(train.splitlines(keepends=True), deploy.splitlines(keepends=True)):
        if op == "equal":
            left.append(visible(old, ends_line=False))
            right.append(visible(new, ends_line=False))
        elif len(old) + len(new) > MAX_FINE_DIFF_CHARS:
            left.append(_marked(old, "del"))
            right.append(_marked(new, "ins"))
        else:
            for fine_op, a, b in _diff(_LEXEME.findall(old), _LEXEME.findall(new)):
                left.append(visible(a, ends_line=False) if fine_op == "equal" else _marked(a, "del"))
                right.append(visible(b, ends_line=False) if fine_op == "equal" else _marked(b, "ins"))
    return join(left), join(right)


def _diff(a: list[str], b: list[str]) -> list[tuple[str, str, str]]:
    """(op, text of a, text of b) for each run of the two sequences: equal, or changed on either side."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [("equal" if op == "equal" else "change", "".join(a[i1:i2]), "".join(b[j1:j2]))
            for op, i1, i2, j1, j2 in matcher.get_opcodes()]


def _marked(text: str, css_class: str, kind: str | None = None) -> Html | None:
    if not text:
        return None
    return el("mark", visible(text, all_spaces=True), class_=css_class, title=kind, data_class=kind)


def _token_differences(differences: tuple[TokenDifferenceView, ...]) -> Html | None:
    """Where the token ids differ even when the text does not show it (a BOS id added by the runtime)."""
    if not differences:
        return None
    items = [el("li", f"train token {d.train_at}: ", el("code", _tokens(d.train)),
                f" → deploy token {d.deploy_at}: ", el("code", _tokens(d.deploy)))
             for d in differences[:MAX_TOKEN_DIFFERENCES]]
    return el("details", el("summary", f"Token ids that differ ({plural(len(differences), 'place')}; id:piece)"),
              el("ul", items, class_="where"),
              cut_note("places", len(differences) - MAX_TOKEN_DIFFERENCES))


def _tokens(tokens: tuple[str, ...]) -> str:
    return shorten(" ".join(tokens), 400) if tokens else "(none)"
