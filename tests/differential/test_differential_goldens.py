"""The differential goldens, replayed without the frameworks: every stored case gives mldebug's verdict equal,
refusal named or flagged, never silent (mldebug showing something other than what the framework trains).

fixtures/differential/SUITE.json.gz holds generated rows (tests/differential/strategies.py, the seed recorded), the
setting and tokenizer of each group, and what the real framework made of each row (digests of its input_ids and
labels, dropped, or the exception it raised), written by ``python tools/differential.py run SUITE --write``.
"""

from __future__ import annotations

import gzip
import json
import sys

import pytest

from support import ROOT

GOLDENS = ROOT / "fixtures" / "differential"
sys.path.insert(0, str(ROOT / "tools"))

import differential  # noqa: E402  (tools/differential.py: the comparison the harness itself runs)


def _documents() -> dict[str, dict]:
    out = {}
    for path in sorted(GOLDENS.glob("*.json.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            out[path.name.removesuffix(".json.gz")] = json.load(handle)
    return out


DOCUMENTS = _documents()
GROUPS = [pytest.param(suite, group, id=f"{suite}-{group['id']}-{group['shape']}-{group['setting']}")
          for suite, document in DOCUMENTS.items() for group in document["groups"]]


def test_the_goldens_record_seed_versions_and_command():
    assert DOCUMENTS, "no goldens under fixtures/differential"
    for suite, document in DOCUMENTS.items():
        assert document["suite"] == suite and isinstance(document["seed"], int)
        assert document["versions"] and document["command"].startswith("python tools/differential.py run")


@pytest.mark.parametrize(("suite", "group"), GROUPS)
def test_no_silent_disagreement(suite, group, tmp_path):
    mine = differential.ours(suite, group, tmp_path)
    silent = [f"row {row}: {detail}" for row, verdict, detail in differential.verdicts(group, group["framework"], mine)
              if verdict == "silent"]
    assert silent == []
