"""The HTML report as text: escaping, size bounds and structure, on real fixtures and on hostile or huge reports."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from mldebug_cli.core.findings import Finding, Location, Report, Severity
from mldebug_cli.formats.html import render_html
from mldebug_cli.formats.json_format import report_document
from support import DATASETS, FIXTURES, LLAMA3, PHI3, PHI3_DEPLOY, QWEN25, needs_corpus, write_jsonl

DEMO = DATASETS / "demo" / "support_chat.jsonl"

STATES = FIXTURES / "trainer_state"
HOSTILE_MESSAGES = [
    {"role": "system", "content": "<style>body{display:none}</style>"},
    {"role": "user", "content": 'Render <script>window.__pwned=1</script> and <img src=x onerror="window.__pwned=2">'
                                ' and " onmouseover="window.__pwned=3'},
    {"role": "assistant", "content": "<|im_end|> is not the end </pre><script>window.__pwned=4</script>"},
]


class Page(HTMLParser):
    """Every start tag with its attributes, the ids, and the text, as a browser's parser sees them."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def all(self, tag: str, **wanted: str) -> list[dict[str, str | None]]:
        return [a for t, a in self.tags if t == tag and all(wanted[k] in (a.get(k) or "").split() for k in wanted)]

    @property
    def ids(self) -> list[str]:
        return [a["id"] for _, a in self.tags if a.get("id")]


def inspect_report(dataset, tokenizer, **options) -> Report:
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    return build_report(InspectOptions(dataset=str(dataset), tokenizer=str(tokenizer), **options))


def lr_report() -> Report:
    from mldebug_cli.pipelines.schedule import build_report

    return build_report(config=str(STATES / "overlay_config.json"), num_rows=40,
                        trainer_state=str(STATES / "per_micro_batch.json"))


@pytest.fixture(scope="module")
def demo() -> Report:
    return inspect_report(DEMO, LLAMA3, framework="axolotl", rows=(6, 11, 14, 20))


def assert_inert(page: Page) -> None:
    """Nothing in the page can run or load: no script, no event handler, no external reference."""
    assert not page.all("script") and not page.all("img") and not page.all("iframe") and not page.all("link")
    assert [t for t, _ in page.tags].count("style") == 1  # the page's own, in <head>
    for tag, attrs in page.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert "src" not in attrs and (attrs.get("href") or "#").startswith("#"), (tag, attrs)


def test_real_report_has_findings_with_explanations_linked_to_rows(demo):
    html = render_html(demo)
    page = Page(html)
    assert_inert(page)
    checks = {a["data-code"] for a in page.all("section", **{"class": "check"})}
    assert {"DS001", "DS004", "DS023", "DS024", "DS025"} <= checks
    assert "An assistant tool call (its function name) that does not appear" in html  # DS024's "What it finds"
    assert page.all("a", href="#s0-row-6") and page.all("a", href="#s0-row-14")
    assert {"s0-row-6", "s0-row-14", "s0-check-DS024", "s0-findings", "s0-summary"} <= set(page.ids)
    assert len(page.ids) == len(set(page.ids))
    assert page.all("span", id="verdict") and "Errors found" in html
    assert "transformers" not in dict(demo.context) and "written by" in html


def test_the_header_names_versions_once(demo):
    """The target versions (the context's line) and the versions that wrote the page are two lines, not two
    "versions"."""
    from mldebug_cli.core.findings import CONTEXT_VERSIONS
    from mldebug_cli.formats.html_parts.page import _checked

    report = replace(demo, context={**demo.context, CONTEXT_VERSIONS: "transformers 5.6.0 (llamafactory's pin)"})
    labels = [label for label, _ in _checked(report, {"mldebug": "1.0"})]
    assert labels.count("versions") == 1 and "written by" in labels


def test_every_token_of_a_shown_row_is_a_chip_with_its_id_and_label(demo):
    doc = report_document(demo)
    row = next(r for r in doc["rows"] if r["row"] == 14)
    html = render_html(demo)
    article = html[html.index('id="s0-row-14"'):]
    article = article[: article.index("</article>")]
    chips = [c for c in Page(article).all("span", **{"class": "tok"}) if "data-id" in c]  # not the legend's
    assert len(chips) == len(row["input_ids"])
    assert [int(c["data-id"]) for c in chips] == row["input_ids"]
    for chip, label in zip(chips, row["labels"]):
        assert ("t" in chip["class"].split()) == (label != -100)
        assert f"label {label}" in chip["title"]
    assert chips[0]["title"].startswith("#0 id 128000 label -100 ") and "sp" in chips[0]["class"].split()
    assert '<span class="special">&lt;|start_header_id|&gt;</span>' in article  # control tokens marked in the prompt


def test_hostile_row_is_text_only(tmp_path):
    data = write_jsonl(tmp_path / "hostile.jsonl", [{"messages": HOSTILE_MESSAGES}])
    report = inspect_report(data, QWEN25, framework="axolotl")
    context = {**report.context, "dataset": '<script>window.__pwned="ctx"</script>'}
    hostile_finding = Finding("DS999", 'x" onclick="1', Severity.ERROR, "<b>bold</b>", "<i>hint</i>",
                              Location(path="<svg onload=1>", row=0, probe="<p>"))
    report = Report(report.command, report.findings + (hostile_finding,), report.checks_run,
                    ('<a href="javascript:alert(1)">t</a>',), context, report.summary, report.details)
    html = render_html(report)
    page = Page(html)
    assert_inert(page)
    text = "".join(page.text)
    for fragment in ("<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=2">',
                     "</pre><script>window.__pwned=4</script>", "<style>body{display:none}</style>",
                     '<script>window.__pwned="ctx"</script>', "<b>bold</b>", "<i>hint</i>"):
        assert fragment in text, fragment
    assert "DS013" in {f.code for f in report.findings}  # the typed <|im_end|> became a real control token


def test_size_is_bounded_and_the_page_says_what_was_cut():
    huge_row = {"row": 0, "prompt": "<x>" * 40_000, "input_ids": list(range(10_000)), "labels": [-100] * 10_000,
                "pieces": ["<x>"] * 10_000, "offsets": [[3 * i, 3 * i + 3] for i in range(10_000)]}
    rows = [dict(huge_row, row=i) for i in range(200)]
    findings = tuple(Finding(f"DS{c:03d}", "n", Severity.WARNING, "m" * 2000, "h", Location(row=r))
                     for c in range(1, 26) for r in range(1_000))
    schedule = [{"step": s, "lr": 1e-4, "epoch": 0.0, "micro_batch": s} for s in range(1, 200_001)]
    probes = [{"name": f"p{i}", "train": "a " * 30_000, "deploy": "b " * 30_000, "identical": False} for i in range(60)]
    sections = [
        report_document(Report("inspect-data", findings, summary={"rows": 10**6, "rows_checked": 200}, details={"rows": rows})),
        report_document(Report("lr-plot", (), details={"schedule": schedule, "warmup_steps": 10, "total_optimizer_steps": 200_000})),
        report_document(Report("check-template", (), details={"probes": probes})),
    ]
    html = render_html(Report("preflight", findings, details={"sections": sections}))
    assert len(html.encode()) < 8_000_000
    for note in ("more rows not shown", "more tokens of this row not shown", "more places not shown",
                 "more characters of the prompt not shown", "more probes not shown"):
        assert note in html, note
    page = Page(html)
    assert len([c for c in page.all("span", **{"class": "tok"}) if "data-id" in c]) == 20_000
    assert len(page.all("polyline")[0]["points"].split()) <= 1_503


def test_lr_plot_curve_marks_warmup_end_peak_and_the_logged_lr():
    report = lr_report()
    page = Page(render_html(report))
    assert_inert(page)
    svg = page.all("svg", **{"class": "lr-curve"})[0]
    assert svg["data-steps"] == "10"
    assert len(page.all("polyline", **{"class": "curve"})[0]["points"].split()) == 10
    assert page.all("g", **{"class": "warmup-end-marker"}) and page.all("circle", **{"class": "peak"})
    assert page.all("g", **{"class": "logged"})[0]["data-count"] == "10"
    text = "".join(page.text)
    assert "warmup end (step 4)" in text and "peak 0.001 (step 4)" in text and "per micro-batch" in text
    assert page.all("a", href="#s0-schedule")  # LR002's key warmup_steps links to the chart


def test_template_probes_side_by_side_with_differences_marked():
    probes = [{"name": "user", "train": "<|user|>\nHi  \n<|assistant|>\n", "deploy": "<|user|>\nHi\n<|end|>\n<|assistant|>\n",
               "identical": False}, {"name": "same", "train": "x", "deploy": "x", "identical": True}]
    finding = Finding("CT001", "template-drift", Severity.ERROR, "differs", None, Location(probe="user"))
    html = render_html(Report("check-template", (finding,), details={"probes": probes}))
    page = Page(html)
    assert [a["data-identical"] for a in page.all("article", **{"class": "probe"})] == ["false", "true"]
    assert '<mark class="del"><span class="ws">··</span></mark>' in html  # trailing spaces only in train
    assert '<mark class="ins">&lt;|end|&gt;' in html and page.all("a", href="#s0-probe-0")


@needs_corpus
def test_check_template_marks_the_pipelines_own_hunks(tmp_path):
    from mldebug_cli.cli import app

    out = tmp_path / "ct.html"
    result = CliRunner().invoke(app, ["check-template", "--train", str(PHI3), "--deploy",
                                      str(PHI3_DEPLOY / "phi-3-literal-bos.Modelfile"), "-f", "html", "-o", str(out)])
    assert result.exit_code == 1, result.output
    html = out.read_text(encoding="utf-8")
    page = Page(html)
    assert_inert(page)
    assert len(page.all("article", **{"class": "probe"})) == 8
    assert '<mark class="ins" title="bos-eos" data-class="bos-eos">&lt;s&gt;</mark>' in html
    assert "Skipped: " in html and "Token ids that differ" in html
    assert page.all("a", href="#s0-probe-0")  # CT003 points at the user probe


def test_real_preflight_gives_each_part_its_findings(tmp_path):
    from mldebug_cli.pipelines.preflight import PreflightOptions, build_report

    report = build_report(PreflightOptions(config=str(FIXTURES / "preflight" / "axolotl" / "config.yml"),
                                           allow_outside_paths=True))
    html = render_html(report)
    checks_by_section = {}
    for part in html.split('<section class="command"')[1:]:
        command = re.search(r'data-command="([^"]+)"', part).group(1)
        checks_by_section[command] = {a["data-code"] for a in Page(part).all("section", **{"class": "check"})}
    assert list(checks_by_section) == ["inspect-data", "lr-plot"]
    assert checks_by_section["inspect-data"] == {f.code for f in report.findings if f.code.startswith("DS")} != set()
    assert checks_by_section["lr-plot"] == {f.code for f in report.findings if f.code.startswith("LR")} != set()
    page = Page(html)
    assert page.all("article", **{"class": "row"}) and page.all("svg", **{"class": "lr-curve"})


def test_preflight_renders_each_section_with_its_command_code(demo):
    lr = lr_report()
    sections = [report_document(demo), report_document(lr)]
    report = Report("preflight", demo.findings + lr.findings, details={"sections": sections})
    page = Page(render_html(report))
    assert [a["data-command"] for a in page.all("section", **{"class": "command"})] == ["inspect-data", "lr-plot"]
    assert {"s0-row-6", "s1-schedule", "s0-check-DS024", "s1-check-LR009"} <= set(page.ids)
    assert len(page.ids) == len(set(page.ids))


def test_render_is_pure_and_the_cli_writes_the_file(tmp_path, demo):
    assert render_html(demo) == render_html(demo)
    from mldebug_cli.cli import app

    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["inspect-data", str(DEMO), "-t", str(LLAMA3), "--rows", "14",
                                      "--output-format", "html", "-o", str(out)])
    assert result.exit_code == 1 and result.stdout == ""
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "mldebug inspect-data" in html
