"""SECURITY.md names, for each promise, the test that holds it (``file::function``): each named test must exist, so
a promise cannot outlive its test; and every promise line names one."""

from __future__ import annotations

import ast
import re

from support import ROOT

NAMED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _promises() -> list[tuple[str, str]]:
    text = (ROOT / "SECURITY.md").read_text()
    section = text.split("## Each promise and the test that holds it", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith(("| promise", "|---"))]
    assert len(rows) >= 30
    named = [NAMED.search(row) for row in rows]
    assert all(named), [row for row, found in zip(rows, named) if not found]
    return [found.groups() for found in named if found]


def _test_functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_security_md_names_exists():
    missing = [f"{path}::{name}" for path, name in _promises()
               if not (ROOT / path).is_file() or name not in _test_functions(path)]
    assert missing == []


def test_the_check_sees_a_missing_test():
    assert "test_every_test_security_md_names_exists" in _test_functions("tests/reliability/test_security_promises.py")
    assert "test_no_such_thing" not in _test_functions("tests/reliability/test_security_promises.py")
