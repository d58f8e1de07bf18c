"""Typed report sections (core/sections.py): the JSON a section writes is the JSON the report always held, and
the renderers read it back field for field."""

from __future__ import annotations

import json

from mldebug_cli.core.sections import ProbesSection, ProbeView
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
