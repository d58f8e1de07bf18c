"""The HTML report opened in headless Chromium: the DOM a person sees, colours as computed, nothing executed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, WIDTH, full_page_screenshot
from typer.testing import CliRunner

from support import DATASETS, FIXTURES, LLAMA3, PHI3, PHI3_DEPLOY, QWEN25, ROOT, needs_corpus, write_jsonl

# Chromium costs seconds of CPU a test (its own processes, beside the test's): the slow tier. The fast tier holds
# the same promises on the HTML text (tests/formats/test_html.py: nothing runs or loads, every fragment escaped).
pytestmark = pytest.mark.slow

DEMO = DATASETS / "demo" / "support_chat.jsonl"

STATES = FIXTURES / "trainer_state"
TRAINED_BG = "rgb(211, 243, 218)"  # --trained in the stylesheet
MASKED_BG = "rgb(236, 239, 241)"  # --masked
DOCS_SCREENSHOT = ROOT / "docs" / "report-screenshot.png"
HOSTILE_MESSAGES = [
    {"role": "system", "content": "<style>body{display:none}</style>"},
    {"role": "user", "content": 'Render <script>window.__pwned=1</script> and <img src=x onerror="window.__pwned=2">'},
    {"role": "assistant", "content": "<|im_end|> is not the end </pre><script>window.__pwned=4</script>"},
]


def cli(*args: object):
    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code in (0, 1), result.output
    return result


def write_report(tmp_path: Path, name: str, *args: object) -> Path:
    """Run the CLI with --output-format html -o FILE, as a user would."""
    out = tmp_path / f"{name}.html"
    cli(*args, "--output-format", "html", "-o", out)
    return out


def open_page(browser, path: Path) -> None:
    browser.set_window_size(WIDTH, 1000)
    browser.get(path.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    assert browser.execute_script("return document.scripts.length") == 0


def chip_states(browser, row_id: str) -> list[dict]:
    return browser.execute_script("""
        return [...document.querySelectorAll('#' + arguments[0] + ' .chips .tok')].map(el => ({
            id: Number(el.dataset.id), title: el.title, trained: el.classList.contains('t'),
            background: getComputedStyle(el).backgroundColor, after: getComputedStyle(el, '::after').content}));
    """, row_id)


def test_inspect_data_report(browser, tmp_path):
    page = write_report(tmp_path, "inspect-data", "inspect-data", DEMO, "-t", LLAMA3, "--framework", "axolotl",
                        "--rows", "6,11,14,20")
    known = json.loads(cli("inspect-data", DEMO, "-t", LLAMA3, "--framework", "axolotl", "--rows", "14", "-f", "json").stdout)["rows"][0]
    open_page(browser, page)
    assert browser.find_element("id", "verdict").text == "Errors found"
    checks = browser.execute_script("""
        return Object.fromEntries([...document.querySelectorAll('section.check')].map(
            s => [s.dataset.code, s.querySelector('.explain') ? s.querySelector('.explain').innerText : '']));""")
    assert {"DS004", "DS023", "DS024", "DS025"} <= set(checks) and all(checks[c] for c in ("DS024", "DS023"))

    link = browser.find_element("css selector", '#s0-check-DS024 a[href="#s0-row-14"]')
    link.click()
    assert browser.execute_script("return document.querySelector(':target').id") == "s0-row-14"

    chips = chip_states(browser, "s0-row-14")
    assert [c["id"] for c in chips] == known["input_ids"]
    for chip, label in zip(chips, known["labels"]):
        assert chip["trained"] == (label != -100)
        assert chip["background"] == (TRAINED_BG if label != -100 else MASKED_BG)
        assert f"label {label}" in chip["title"]
    assert all(c["after"] == "none" for c in chips)  # ids hidden until the toggle
    browser.find_element("css selector", "label.show-ids").click()
    assert [c["after"] for c in chip_states(browser, "s0-row-14")[:3]] == [f'"{i}"' for i in known["input_ids"][:3]]
    browser.find_element("css selector", "label.show-ids").click()

    bars = browser.execute_script("return [...document.querySelectorAll('svg.histogram rect.bar')].map(r => r.getBBox().height)")
    assert bars and all(h > 0 for h in bars)
    full_page_screenshot(browser, "inspect-data")


def test_a_row_holding_script_and_img_text_runs_nothing(browser, tmp_path):
    data = write_jsonl(tmp_path / "hostile.jsonl", [{"messages": HOSTILE_MESSAGES}])
    open_page(browser, write_report(tmp_path, "hostile", "inspect-data", data, "-t", QWEN25, "--framework", "axolotl"))
    state = browser.execute_script("""
        return {pwned: typeof window.__pwned, elements: document.querySelectorAll('body script, body img, body iframe').length,
                styles: document.querySelectorAll('style').length, shown: document.body.offsetHeight,
                prompt: document.querySelector('pre.prompt').innerText,
                findings: [...document.querySelectorAll('section.check')].map(s => s.dataset.code)};""")
    assert state["pwned"] == "undefined" and state["elements"] == 0 and state["styles"] == 1 and state["shown"] > 0
    for text in ("<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=2">',
                 "</pre><script>window.__pwned=4</script>", "<style>body{display:none}</style>"):
        assert text in state["prompt"], text
    assert "DS013" in state["findings"]  # the typed <|im_end|> became a control token
    full_page_screenshot(browser, "hostile-row")


def test_lr_plot_report(browser, tmp_path):
    open_page(browser, write_report(tmp_path, "lr-plot", "lr-plot", "--config", STATES / "overlay_config.json",
                                    "--num-rows", "40", "--trainer-state", STATES / "per_micro_batch.json"))
    chart = browser.execute_script("""
        const svg = document.querySelector('svg.lr-curve'), curve = svg.querySelector('polyline.curve');
        return {width: svg.getBoundingClientRect().width, points: curve.points.numberOfItems, length: curve.getTotalLength(),
                warmup: svg.querySelector('.warmup-end-marker text').textContent,
                peak: svg.querySelector('.peak-point text').textContent,
                logged: svg.querySelectorAll('g.logged circle').length,
                findings: [...document.querySelectorAll('section.check')].map(s => s.dataset.code)};""")
    assert chart["width"] > 300 and chart["points"] == 10 and chart["length"] > 100
    assert chart["warmup"] == "warmup end (step 4)" and chart["peak"] == "peak 0.001 (step 4)"
    assert chart["logged"] == 10 and "LR009" in chart["findings"]
    full_page_screenshot(browser, "lr-plot")


@needs_corpus
def test_check_template_report(browser, tmp_path):
    open_page(browser, write_report(tmp_path, "check-template", "check-template", "--train", PHI3,
                                    "--deploy", PHI3_DEPLOY / "phi-3-literal-bos.Modelfile"))
    probe = browser.execute_script("""
        const article = document.querySelector('article.probe'), [train, deploy] = article.querySelectorAll('pre.side');
        const a = train.getBoundingClientRect(), b = deploy.getBoundingClientRect();
        return {name: article.querySelector('h3 code').textContent, inserted: deploy.querySelector('mark.ins').textContent,
                sideBySide: a.right <= b.left && Math.abs(a.top - b.top) < 2, probes: document.querySelectorAll('article.probe').length,
                findings: [...document.querySelectorAll('section.check')].map(s => s.dataset.code)};""")
    assert probe["name"] == "user" and probe["inserted"] == "<s>" and probe["sideBySide"]
    assert probe["probes"] == 8 and "CT003" in probe["findings"]
    full_page_screenshot(browser, "check-template")


def test_preflight_report_has_a_section_per_part(browser, tmp_path):
    open_page(browser, write_report(tmp_path, "preflight", "preflight", FIXTURES / "preflight" / "axolotl" / "config.yml"))
    sections = browser.execute_script(
        "return [...document.querySelectorAll('section.command')].map(s => [s.dataset.command, s.querySelectorAll('section.check').length])")
    assert [s[0] for s in sections] == ["inspect-data", "lr-plot"] and sections[0][1] > 0
    # the row shown is the most serious one (row 17, content null: nothing to tokenize) beside the LR curve
    assert browser.execute_script("return document.querySelectorAll('svg.lr-curve polyline.curve').length") == 1
    assert browser.execute_script("return [...document.querySelectorAll('article.row')].map(a => a.id)") == ["s0-row-17"]
    full_page_screenshot(browser, "preflight")


def test_readme_screenshot(browser, tmp_path, monkeypatch):
    """The manual's picture (docs/output-formats.md), cut from a full-page screenshot of a real report: the header and the first two
    findings, then the row they point at with its coloured tokens; 128 colours to stay small.

    Written to out/screenshots/report-screenshot.png on every run; copied to docs/ with MLDEBUG_UPDATE_SCREENSHOT=1,
    so a run on a machine with other fonts never rewrites the committed picture by accident.
    """
    from PIL import Image

    monkeypatch.chdir(ROOT)  # relative paths in the page, as a user would type them
    page = write_report(tmp_path, "readme", "inspect-data", DEMO.relative_to(ROOT), "-t", LLAMA3.relative_to(ROOT),
                        "--framework", "axolotl", "--rows", "14")
    open_page(browser, page)
    shot = Image.open(full_page_screenshot(browser, "readme-full", width=1100)).convert("RGB")
    top = browser.execute_script("return document.querySelector('#s0-check-DS024').getBoundingClientRect().bottom")
    row = browser.execute_script("const r = document.querySelector('#s0-row-14').getBoundingClientRect(); return [r.top, r.bottom]")
    parts = [shot.crop((0, 0, shot.width, int(top) + 12)), shot.crop((0, int(row[0]) - 12, shot.width, int(row[1]) + 12))]
    image = Image.new("RGB", (shot.width, sum(p.height for p in parts)), "white")
    image.paste(parts[0], (0, 0))
    image.paste(parts[1], (0, parts[0].height))
    small = SCREENSHOTS / "report-screenshot.png"
    image.quantize(colors=128).save(small, optimize=True)
    assert small.stat().st_size < 300_000
    if os.environ.get("MLDEBUG_UPDATE_SCREENSHOT"):
        DOCS_SCREENSHOT.parent.mkdir(exist_ok=True)
        shutil.copyfile(small, DOCS_SCREENSHOT)
