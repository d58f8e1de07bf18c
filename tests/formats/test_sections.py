"""Typed report sections (core/sections/): the JSON a section writes is the JSON the report always held, and
the renderers read it back field for field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mldebug_cli.core.findings import Finding
from mldebug_cli.core.sections.memory import MemorySection, MemorySummary
from mldebug_cli.core.sections.pairs import PairsSection, PairsSummary, PairView
from mldebug_cli.core.sections.preflight import PreflightSection
from mldebug_cli.core.sections.probes import ProbesSection, ProbesSummary, ProbeView
from mldebug_cli.core.sections.rows import RowsSection, RowsSummary, RowView
from mldebug_cli.core.sections.runlog import RunSection, RunSummary
from mldebug_cli.core.sections.schedule import ScheduleSection, ScheduleSummary
from mldebug_cli.pipelines.template_check import CheckTemplateOptions, build_report
from support import QWEN25


def _report(tmp_path):
    modelfile = tmp_path / "Modelfile"
    modelfile.write_text('FROM qwen2.5\nTEMPLATE """{{- range $m := .Messages }}<|im_start|>{{ $m.Role }}\n'
                         '{{ $m.Content }} <|im_end|>\n{{ end }}<|im_start|>assistant\n"""\nPARAMETER stop "<|im_end|>"\n')
    return build_report(CheckTemplateOptions(train=str(QWEN25), deploy=str(modelfile)))


def test_the_probes_section_reads_back_what_it_wrote(tmp_path):
    report = _report(tmp_path)
    section = ProbesSection.from_details(report.details)
    assert section.as_details() == dict(report.details)
    assert json.loads(json.dumps(section.as_details())) == dict(report.details)  # plain JSON-ready data
    differing = [p for p in section.probes if p.differs]
    assert differing and all(p.hunks for p in differing)
    assert {h.kind for p in differing for h in p.hunks} >= {"whitespace"}


def test_a_probe_read_from_an_older_report_without_optional_keys():
    probe = ProbeView.from_dict({"name": "user", "train": "a", "deploy": "a", "identical": True})
    assert probe.compared and not probe.differs and probe.hunks == () and probe.token_differences == ()
    assert probe.as_dict() == {"name": "user", "train": "a", "deploy": "a", "identical": True}
    skipped = ProbeView.from_dict({"name": "tool-call", "train": None, "deploy": None, "identical": False,
                                   "skipped": "the template renders no tools"})
    assert not skipped.compared and not skipped.differs and "hunks" not in skipped.as_dict()


EXPECTED_JSON = Path(__file__).resolve().parent / "expected" / "json"
_SECTIONS = {  # command -> (summary type, details type)
    "inspect-data": (RowsSummary, RowsSection),
    "lr-plot": (ScheduleSummary, ScheduleSection),
    "check-run": (RunSummary, RunSection),
    "check-template": (ProbesSummary, ProbesSection),
    "memory": (MemorySummary, MemorySection),
}
_REPORT_KEYS = ("tool", "command", "context", "findings", "summary")


def _sections_of(command: str, summary: dict):
    if command == "inspect-data" and PairsSummary.describes(summary):
        return PairsSummary, PairsSection
    return _SECTIONS[command]


def _assert_round_trip(command: str, summary: dict, details: dict) -> None:
    summary_type, section_type = _sections_of(command, summary)
    assert summary_type.from_dict(summary).as_dict() == summary
    assert section_type.from_details(details).as_details() == details


@pytest.mark.parametrize("path", sorted(EXPECTED_JSON.glob("*.json")), ids=lambda p: p.stem)
def test_every_section_reads_back_what_the_json_report_holds(path):
    """Each command's section, read from its stored JSON report, writes that JSON back key for key and in order."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    details = {k: v for k, v in doc.items() if k not in _REPORT_KEYS}
    if doc["command"] != "preflight":
        _assert_round_trip(doc["command"], doc["summary"], details)
        assert json.dumps(_sections_of(doc["command"], doc["summary"])[1].from_details(details).as_details()) == \
            json.dumps(details)  # the same order too
        return
    section = PreflightSection.from_details(details)
    assert section.as_details() == details
    assert section.summary(doc["summary"]["by_check"]) == doc["summary"]
    for part in section.parts:
        assert all(isinstance(f, Finding) for f in part.findings)
        _assert_round_trip(part.command, dict(part.summary), dict(part.details))


def test_a_finding_reads_back_from_its_json():
    doc = json.loads((EXPECTED_JSON / "inspect-data-sft.json").read_text(encoding="utf-8"))
    for data in doc["findings"]:
        assert Finding.from_dict(data).as_dict() == data


def test_a_row_view_from_an_older_report_without_optional_keys():
    row = RowView.from_dict({"row": 3, "input_ids": [1, 2, 3], "labels": [-100, 2, 3]})
    assert row.trained == 2 and row.pieces is None and row.error is None and row.covered_texts() == []
    assert "masking" not in row.as_dict() and "error" not in row.as_dict()


def test_a_kto_completion_keeps_its_keys_at_the_row_level():
    pair = PairView.from_dict({"row": 0, "task": "kto", "prompt": "p", "prompt_tokens": 1, "input_ids": [5, 6],
                               "labels": [-100, 6], "pieces": ["a", "b"], "label": False, "texts": ["a", "b"]})
    assert [s.name for s in pair.sides] == ["completion"] and not pair.paired and pair.sides[0].label is False
    assert list(pair.as_dict()) == ["row", "task", "prompt", "prompt_tokens", "input_ids", "labels", "pieces", "label",
                                    "texts"]
