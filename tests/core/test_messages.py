"""Every check's words, as a user reads them: run the checks on their fixtures, render text and HTML, and refuse
"1 rows"-style plurals, doubled "message 3: message 3:" prefixes, raw floats (more than 6 significant digits),
"packing estimate: ?-10", and a preflight report that credits --num-rows for a count it made itself."""

from __future__ import annotations

import html
import io
import re
from functools import cache
from pathlib import Path

import pytest

from mldebug_cli.core.findings import Report
from mldebug_cli.formats import render_report
from support import FIXTURES, LLAMA3, NEMO, QWEN3, QWEN25, write_jsonl

CONFIGS = FIXTURES / "configs"
STATES = FIXTURES / "trainer_state"

_NOUNS = (
    "rows|row checks|checks|tokens|places|tool definitions|definitions|steps|optimizer steps|epochs|messages|turns|"
    "errors|warnings|infos|findings|times|probes|lines|characters|micro-batches|probe conversations|conversations|"
    "tokens trained|batches|processes|entries|files|keys|seconds"
)
ONE_PLURAL = re.compile(rf"(?<![\d.,])\b1 ({_NOUNS})\b")
DOUBLED = re.compile(r"\b((?:message|turn|row|probe|key) [\w.-]+)(?: \([^)]*\))?: \1\b")
FLOAT = re.compile(r"(?<![\w.])(\d+\.\d+)(?:e[-+]?\d+)?(?![\w.])")
UNKNOWN_SPAN = re.compile(r"\?-\d")


def significant_digits(number: str) -> int:
    return len(number.replace(".", "").lstrip("0"))


def problems(text: str) -> list[str]:
    """What a reader should never see in ``text``, each with the words around it."""
    def around(m: re.Match) -> str:
        return " ".join(text[max(0, m.start() - 60): m.end() + 30].split())

    found = [f"plural: {around(m)}" for m in ONE_PLURAL.finditer(text)]
    found += [f"doubled prefix: {around(m)}" for m in DOUBLED.finditer(text)]
    found += [f"raw float: {around(m)}" for m in FLOAT.finditer(text) if significant_digits(m.group(1)) > 6]
    found += [f"unknown bound: {around(m)}" for m in UNKNOWN_SPAN.finditer(text)]
    return found


def visible_html(page: str) -> str:
    """The text a browser shows: no scripts (the embedded JSON keeps every exact value), styles or tags."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def rendered(report: Report) -> dict[str, str]:
    """The findings' own words, and the text and HTML reports."""
    out = {"messages": "\n".join(f"{f.code}: {f.message} | {f.hint or ''}" for f in report.findings)}
    for fmt in ("text", "html"):
        stream = io.StringIO()
        render_report(report, fmt, stream, color=False)
        out[fmt] = stream.getvalue() if fmt == "text" else visible_html(stream.getvalue())
    return out


def test_the_detector_catches_what_it_is_for():
    bad = ("1 rows truncated in 1 checks; row 0, message 3: message 3: x; final LR 7.612046748871327e-06; "
           "4.9000000000000005e-06; epochs run 2.5333333333333333; packing estimate: ?-10; 1 tool definitions")
    kinds = [p.split(":")[0] for p in problems(bad)]
    assert kinds.count("plural") == 3 and kinds.count("doubled prefix") == 1 and kinds.count("raw float") == 3
    assert kinds.count("unknown bound") == 1
    fine = "1 row, 2 rows, 1 check; LR 7.612e-06, peak 0.0002; transformers 5.23.0; epochs run 2.53; 12,000 tokens"
    assert problems(fine) == []


# ---------------------------------------------------------------- the scenarios: our own rows and configs


def _chat(user: str, reply: str, **extra) -> dict:
    return {"messages": [{"role": "user", "content": user}, {"role": "assistant", "content": reply}], **extra}


TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def _rows() -> list[dict]:
    weather_call = {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    return [
        _chat("Give me one prime number.", "7"),
        _chat("What does <|im_end|> do in a prompt?", "It ends the turn.</s> That is all."),
        _chat("Summarise: the meeting moved to Friday.", ""),
        {"messages": [{"role": "system", "content": "You answer briefly."},
                      {"role": "user", "content": "Weather in Oslo?"},
                      {"role": "assistant", "content": "", "tool_calls": [weather_call]},
                      {"role": "tool", "content": '{"temp_c": 4}'},
                      {"role": "assistant", "content": "It is 4 degrees in Oslo."}], "tools": TOOLS},
        {"messages": [{"role": "user", "content": "Plan a trip."},
                      {"role": "assistant", "content": "Pack light.", "reasoning_content": "The user wants tips."}]},
        {"messages": [{"role": "narrator", "content": "Once upon a time"}, {"role": "assistant", "content": "Hi"}]},
        _chat("List three colours in one sentence, please, with detail. " * 6, "Red, green and blue. " * 12),
        {"messages": [{"role": "user"}]},
        {"text": "<s>[INST] Hi [/INST] Hello</s>"},
    ]


@cache
def _dataset(folder: str) -> Path:
    path = Path(folder) / "chat.jsonl"
    return write_jsonl(path, _rows())


INSPECT_CASES = [
    (QWEN25, {}), (QWEN25, {"framework": "axolotl", "max_length": 40}), (NEMO, {"framework": "axolotl"}),
    (NEMO, {"train_on": "all", "max_length": 24}), (LLAMA3, {"framework": "llama-factory"}), (QWEN3, {}),
]


@pytest.mark.parametrize(("tokenizer", "options"), INSPECT_CASES, ids=lambda v: getattr(v, "name", None) or str(v))
def test_inspect_data_words_and_numbers(tmp_path, tokenizer, options):
    from mldebug_cli.pipelines.inspect import InspectOptions, build_report

    path = write_jsonl(tmp_path / "chat.jsonl", _rows())
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(tokenizer), all_rows=True, **options))
    assert len({f.code for f in report.findings}) >= 3  # the rows are made to be flagged
    for where, text in rendered(report).items():
        assert problems(text) == [], where


LR_CASES = [(config.name, rows) for config in sorted(CONFIGS.iterdir()) if config.suffix in (".json", ".yaml", ".yml")
            and config.name != "ds_config_zero2.json" for rows in (1, 29, 1000)]


@pytest.mark.parametrize(("config", "rows"), LR_CASES)
def test_lr_plot_words_and_numbers(config, rows):
    from mldebug_cli.pipelines.schedule import build_report

    report = build_report(config=str(CONFIGS / config), num_rows=rows)
    for where, text in rendered(report).items():
        assert problems(text) == [], where


AXOLOTL_29 = """base_model: Qwen/Qwen2.5-0.5B-Instruct
datasets:
  - path: train.jsonl
    type: chat_template
micro_batch_size: 2
gradient_accumulation_steps: 4
num_epochs: 3
learning_rate: 0.0002
lr_scheduler: cosine
"""


@pytest.mark.parametrize("packing", [True, False])
def test_lr007_shows_the_arithmetic_axolotl_does(tmp_path, packing):
    """29 rows x 3 epochs / global batch 8 = 10.875: floor 10 with packing (was printed as "ceil(...) = 10")."""
    from mldebug_cli.pipelines.schedule import build_report

    config = tmp_path / "axolotl.yml"
    config.write_text(AXOLOTL_29 + ("sample_packing: true\nsequence_len: 2048\n" if packing else ""), encoding="utf-8")
    report = build_report(config=str(config), num_rows=29)
    [lr007] = [f.message for f in report.findings if f.code == "LR007"]
    expected = "floor(29 rows x 3 epochs / global batch 8) = 10" if packing else \
        "ceil(29 rows x 3 epochs / global batch 8) = 11"
    assert expected in lr007, lr007
    assert "the run stops before the requested 3 epochs, after 2.53 epochs" in lr007 if packing else \
        "after 2.8 epochs" in lr007
    for where, text in rendered(report).items():
        assert problems(text) == [], where


@pytest.mark.parametrize(("framework_lines", "key"), [
    ("", "warmup_ratio: 0.03"),  # axolotl
])
def test_warmup_hint_uses_the_frameworks_own_key(tmp_path, framework_lines, key):
    from mldebug_cli.pipelines.schedule import build_report

    config = tmp_path / "axolotl.yml"
    config.write_text(AXOLOTL_29 + "warmup_steps: 0\n" + framework_lines, encoding="utf-8")
    report = build_report(config=str(config), num_rows=1000, select=["LR002"])
    [hint] = [f.hint for f in report.findings]
    assert hint.endswith(key), hint


def test_warmup_hint_for_transformers_is_warmup_steps(tmp_path):
    import json

    from mldebug_cli.pipelines.schedule import build_report

    config = tmp_path / "args.json"
    config.write_text(json.dumps({"learning_rate": 2e-4, "per_device_train_batch_size": 8, "num_train_epochs": 1,
                                  "lr_scheduler_type": "cosine", "warmup_steps": 0}), encoding="utf-8")
    report = build_report(config=str(config), num_rows=1000, select=["LR002"])
    [hint] = [f.hint for f in report.findings]
    assert hint.endswith("warmup_steps: 0.03"), hint


@pytest.mark.parametrize("state", ["correct.json", "per_micro_batch.json", "resumed.json", "skipped_fp16.json",
                                   "logged_after_step.json"])
def test_overlay_words_and_numbers(state):
    from mldebug_cli.pipelines.schedule import build_report

    report = build_report(config=str(STATES / "overlay_config.json"), num_rows=40, trainer_state=str(STATES / state))
    for where, text in rendered(report).items():
        assert problems(text) == [], where


def test_preflight_words_and_numbers_and_where_the_row_count_came_from():
    from mldebug_cli.pipelines.preflight import PreflightOptions, build_report

    report = build_report(PreflightOptions(config=str(FIXTURES / "preflight" / "axolotl" / "config.yml")))
    words = rendered(report)
    for where, text in words.items():
        assert problems(text) == [], where
    assert "--num-rows" not in words["html"] and "--num-rows" not in words["text"]
    assert "the config's datasets" in words["html"]


@pytest.mark.parametrize(("train", "deploy"), [
    (NEMO, FIXTURES / "modelfiles" / "mistral-nemo-inst-space.Modelfile"),
    (QWEN3, FIXTURES / "deploy" / "qwen3-chatml-system.Modelfile"),
    (QWEN3, FIXTURES / "deploy" / "qwen3-chatml-no-stop.Modelfile"),
    (QWEN25, FIXTURES / "deploy" / "qwen3-chatml-system.Modelfile"),
])
def test_check_template_words_and_numbers(train, deploy):
    from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report

    report = build_report(CheckTemplateOptions(train=str(train), deploy=str(deploy)))
    assert report.findings
    for where, text in rendered(report).items():
        assert problems(text) == [], where


def test_the_number_formatter():
    from mldebug_cli.core.numbers import epochs, lr, number, percent, plural

    assert [lr(7.612046748871327e-06), lr(4.9000000000000005e-06), lr(0.0002), lr(0.0)] == \
        ["7.612e-06", "4.9e-06", "0.0002", "0"]
    assert [epochs(2.5333333333333333), epochs(2.997), epochs(3.0), epochs(1.5)] == ["2.53", "2.997", "3", "1.5"]
    assert [plural(1, "row"), plural(2, "row"), plural(12000, "token"), plural(1, "tool definition"),
            plural(3, "tool definition"), plural(2, "micro-batch", "micro-batches"), plural(2, "epoch")] == \
        ["1 row", "2 rows", "12,000 tokens", "1 tool definition", "3 tool definitions", "2 micro-batches", "2 epochs"]
    assert [number(10.0), number(2.5333333), number(1234567)] == ["10", "2.533", "1,234,567"]
    assert [percent(0.154), percent(0.0004), percent(0.739)] == ["15.4%", "0.04%", "73.9%"]


def test_html_cut_notes_agree_with_their_count():
    from mldebug_cli.formats.html_parts.text_view import cut_note

    assert problems(visible_html(cut_note("rows", 1))) == [] and "1 more row not shown" in cut_note("rows", 1)
    assert "1 more token of this row" in cut_note("tokens of this row", 1)
    assert "3 more places" in cut_note("places", 3)


def test_an_exception_is_said_on_one_line_by_one_function():
    """A third-party exception's words in an error message: whitespace runs made one space, cut to a limit; and no
    module spells that out again (core.errors.in_one_line is the one place)."""
    from mldebug_cli.core.errors import in_one_line

    error = ValueError("Expecting value:\n  line 1\tcolumn 2 \r\n(char 1)  ")
    assert in_one_line(error) == "Expecting value: line 1 column 2 (char 1)"
    assert in_one_line(error, 15) == "Expecting value"
    assert in_one_line(ValueError()) == "" and in_one_line("a\nb") == "a b"
    package = Path(__file__).resolve().parents[2] / "mldebug_cli"
    spelled = re.compile(r"""join\(str\([^)]*\)\.split\(\)\)""")
    assert [str(p.relative_to(package)) for p in sorted(package.rglob("*.py")) if spelled.search(p.read_text())] == \
        ["core/errors.py"]
