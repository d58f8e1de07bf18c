"""The report keeps the first K findings of each check in full and counts the rest (core.findings.FindingKeeper), so
what the driver holds does not grow with the dataset: the kept findings are the first K of each check of the full
report in row order, and every count (summary, severities, exit code, text places) is that of the full report."""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import replace

import pytest

from mldebug_cli.core.exit import exit_code_for
from mldebug_cli.core.findings import KEPT_PER_CHECK, Severity
from mldebug_cli.formats import text
from mldebug_cli.formats.json_format import report_document
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import QWEN25, ROOT, generated_chat, write_jsonl

KEPT = 3


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    path = write_jsonl(tmp_path_factory.mktemp("flat") / "rows.jsonl", [generated_chat(i) for i in range(400)])
    options = InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True, max_length=64, workers=1)
    return build_report(replace(options, findings_kept=None)), build_report(replace(options, findings_kept=KEPT))


def test_the_kept_findings_are_the_first_of_each_check_and_the_rest_are_counted(reports):
    full, capped = reports
    by_code: dict[str, list] = {}
    for f in full.findings:
        by_code.setdefault(f.code, []).append(f)
    assert any(len(group) > KEPT for group in by_code.values()), "the dataset must plant more than K of some check"
    assert capped.findings == tuple(f for f in full.findings if by_code[f.code].index(f) < KEPT)
    assert sum(n.count for n in capped.not_kept) == len(full.findings) - len(capped.findings)
    assert {n.code: n.count for n in capped.not_kept} == {c: len(g) - KEPT for c, g in by_code.items() if len(g) > KEPT}
    assert capped.summary == full.summary and capped.counts() == full.counts() and capped.worst() == full.worst()
    for fail_on in Severity:
        assert exit_code_for(capped, fail_on) == exit_code_for(full, fail_on)


def test_json_lists_what_was_not_kept_and_the_full_report_has_no_such_key(reports):
    full, capped = reports
    assert "findings_not_kept" not in report_document(full)
    listed = report_document(capped)["findings_not_kept"]
    assert listed == [n.as_dict() for n in capped.not_kept] and all(n["count"] > 0 for n in listed)


def test_the_text_report_counts_every_place(reports):
    full, capped = reports
    out_full, out_capped = io.StringIO(), io.StringIO()
    text.render(full, out_full)
    text.render(capped, out_capped)
    code = capped.not_kept[0].code
    head = next(line for line in out_full.getvalue().splitlines() if f" {code} " in line and "places" in line)
    assert head in out_capped.getvalue()
    assert f"the first {KEPT} are kept in the report" in out_capped.getvalue()
    assert out_full.getvalue().splitlines()[0] == out_capped.getvalue().splitlines()[0]  # the verdict line


def _stored_reports(value):
    if isinstance(value, dict):
        findings = value.get("findings")
        if isinstance(findings, list) and findings and all(isinstance(f, dict) and "code" in f for f in findings):
            yield findings
        for item in value.values():
            yield from _stored_reports(item)
    elif isinstance(value, list):
        for item in value:
            yield from _stored_reports(item)


def test_every_stored_report_is_below_k_so_its_output_is_unchanged():
    """K is larger than any check's count in the stored expected reports: they read the same with the cap."""
    seen = 0
    for path in (ROOT / "tests").rglob("*.json"):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            continue
        for findings in _stored_reports(document):
            seen += 1
            worst = Counter(f["code"] for f in findings).most_common(1)[0]
            assert worst[1] < KEPT_PER_CHECK, f"{path}: {worst[1]} {worst[0]} findings, K is {KEPT_PER_CHECK}"
    assert seen >= 10, "the expected reports were not found"


@pytest.fixture(scope="module")
def pair_reports(tmp_path_factory):
    """DPO pairs with a planted finding on most rows (identical sides every 2nd, an empty side every 3rd)."""
    rows = [{"prompt": f"Question {i}?", "chosen": f"Answer {i}." if i % 3 else " ",
             "rejected": f"Answer {i}." if i % 2 == 0 else f"No {i}."} for i in range(120)]
    path = write_jsonl(tmp_path_factory.mktemp("pairs") / "rows.jsonl", rows)
    options = InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True, workers=1, task="dpo")
    return build_report(replace(options, findings_kept=None)), build_report(replace(options, findings_kept=KEPT))


def test_preference_rows_keep_the_first_k_of_each_check_and_count_the_rest(pair_reports):
    full, capped = pair_reports
    by_code = Counter(f.code for f in full.findings)
    assert by_code["DP001"] > KEPT and by_code["DP002"] > KEPT, by_code
    assert capped.findings == tuple(f for f in full.findings
                                    if [g for g in full.findings if g.code == f.code].index(f) < KEPT)
    assert {n.code: n.count for n in capped.not_kept} == {c: n - KEPT for c, n in by_code.items() if n > KEPT}
    assert capped.summary == full.summary and capped.counts() == full.counts()
    assert capped.summary["by_check"]["DP001"] == by_code["DP001"]


def test_a_missing_reward_column_is_counted_not_listed_row_by_row(tmp_path):
    """DP012 holds how many rows lack the column and the first, never a list of rows (flat in rows)."""
    rows = [{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}], **({"answer": str(i + 1)} if i % 4 == 0 else {})}
            for i in range(200)]
    path = write_jsonl(tmp_path / "grpo.jsonl", rows)
    report = build_report(InspectOptions(dataset=str(path), tokenizer=str(QWEN25), all_rows=True, workers=1,
                                         task="grpo", reward_columns=("answer",)))
    (finding,) = [f for f in report.findings if f.code == "DP012"]
    assert finding.message.startswith("150 row(s) have no 'answer' column") and finding.location.row == 1
    assert "(first: row 1)" in finding.message


@pytest.fixture(scope="module")
def vision_reports(tmp_path_factory):
    """TRL's vision example (one finding or more on most of its 10 rows) repeated 6 times, its images beside it."""
    import shutil

    folder = tmp_path_factory.mktemp("vision")
    example = ROOT / "fixtures" / "datasets" / "vision" / "trl_vision_sft.jsonl"
    shutil.copytree(example.parent / "images", folder / "images")
    lines = [line for line in example.read_text(encoding="utf-8").splitlines() if line.strip()]
    (folder / "rows.jsonl").write_text("\n".join(lines * 6) + "\n", encoding="utf-8")
    options = InspectOptions(dataset=str(folder / "rows.jsonl"), tokenizer=str(ROOT / "fixtures" / "processors" / "qwen2-vl"),
                             all_rows=True, max_length=300)
    return build_report(replace(options, findings_kept=None)), build_report(replace(options, findings_kept=KEPT))


@pytest.mark.slow  # two reports on 60 image rows: seconds of image processing
def test_vision_rows_keep_the_first_k_of_each_check_and_count_the_rest(vision_reports):
    full, capped = vision_reports
    by_code = Counter(f.code for f in full.findings)
    assert sum(1 for n in by_code.values() if n > KEPT) >= 3, by_code
    assert capped.findings == tuple(f for f in full.findings
                                    if [g for g in full.findings if g.code == f.code].index(f) < KEPT)
    assert {n.code: n.count for n in capped.not_kept} == {c: n - KEPT for c, n in by_code.items() if n > KEPT}
    assert capped.summary == full.summary and capped.counts() == full.counts() and capped.worst() == full.worst()
    assert len(capped.findings) <= KEPT * len(by_code)
