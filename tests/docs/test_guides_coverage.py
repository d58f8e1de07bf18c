"""docs/guides-coverage.md: the counts table is the count of the page's own item rows, and every check code the page
names is a registered check (a renamed or removed check cannot leave the page claiming it)."""

from __future__ import annotations

import re

from mldebug_cli.core import registry
from support import ROOT

PAGE = ROOT / "docs" / "guides-coverage.md"
STATUSES = ("checked", "partly", "not covered", "advice")
NOT_ITEMS = ("Counts", "What is left", "The issue's eleven gaps, and what answers each")


def _sections() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in re.split(r"^## ", PAGE.read_text(), flags=re.M)[1:]:
        title, *lines = part.splitlines()
        out[title] = [line for line in lines if line.startswith("| ") and not line.startswith(("| item", "| section"))]
    return out


def _status(row: str) -> str:
    last = row.rstrip(" |").rsplit("|", 1)[1].strip()
    found = [s for s in STATUSES if last.startswith(s)]
    assert found, f"a row without a status: {row}"
    return found[0]


def test_the_counts_table_counts_the_rows():
    sections = _sections()
    expected = {}
    for title, rows in sections.items():
        if title in NOT_ITEMS:
            continue
        statuses = [_status(r) for r in rows]
        expected[title] = [len(rows), *(statuses.count(s) for s in STATUSES)]
    expected["**all**"] = [sum(column) for column in zip(*expected.values())]
    table = {cells[0]: [int(c) for c in cells[1:]]
             for cells in ([c.strip() for c in row.strip("|").split("|")] for row in sections["Counts"])}
    assert table == expected


def test_every_code_named_is_a_registered_check():
    codes = {r.code for r in registry.REGISTRY}
    named = set(re.findall(r"\b([A-Z]{2,3}\d{3})\b", PAGE.read_text()))
    assert named and named <= codes, sorted(named - codes)
