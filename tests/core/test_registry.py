"""The check registry: selectors, lazy loading, and documentation of every check."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mldebug_cli.core import registry
from mldebug_cli.core.errors import UsageError

HEADINGS = ("What it finds", "Why it matters for training", "Example", "Fix")
PACKAGE = Path(registry.__file__).resolve().parents[1]
CODE_SHAPE = re.compile(r"(DS|CT|LR|CF|RN|DP|GP|MEM)[0-9]{3}")


def test_codes_and_names_are_unique_and_well_formed():
    codes = [r.code for r in registry.REGISTRY]
    names = [r.name for r in registry.REGISTRY]
    assert len(set(codes)) == len(codes) and len(set(names)) == len(names)
    assert all(c.rstrip("0123456789") in ("DS", "CT", "LR", "CF", "RN", "DP", "MEM", "GP") and c[-3:].isdigit() for c in codes)
    assert all(n == n.lower() and " " not in n for n in names)


@pytest.mark.parametrize("ref", registry.REGISTRY, ids=lambda r: r.code)
def test_every_check_loads_with_its_documentation(ref):
    check = registry.load(ref)
    assert check.code == ref.code and check.subject in (
        "row", "setup", "schedule", "probe", "template", "config", "run", "pair", "preference-dataset", "memory", "vision-row",
        "preference-setup", "overlap", "completions", "comparison", "dataset-merge")
    positions = [check.doc.find(h) for h in HEADINGS]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), ref.code
    doc = check.documentation  # what explain, SARIF, HTML and the README table read
    assert all((doc.finds, doc.why, doc.example, doc.fix)) and doc.summary, ref.code
    assert [heading for heading, _ in doc.sections()] == list(HEADINGS), ref.code


def test_every_code_constant_is_its_checks_registry_line():
    constants = {name: value for name, value in vars(registry.Code).items() if not name.startswith("_")}
    by_code = {ref.code: ref for ref in registry.REGISTRY}
    assert constants, "registry.Code holds no constant"
    for name, code in constants.items():
        assert code in by_code, f"Code.{name} = {code!r} is no check's code"
        assert name == by_code[code].name.upper().replace("-", "_"), f"Code.{name} is not named after {code}'s check"


def _code_literals(source: str) -> list[tuple[int, str]]:
    """The string constants of a module's source that are exactly a check code, with their lines."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE_SHAPE.fullmatch(node.value)]


def test_no_check_code_is_spelled_outside_the_checks_and_the_registry():
    owners = (PACKAGE / "checks", PACKAGE / "core" / "registry.py")
    spelled = [f"{path.relative_to(PACKAGE)}:{line} {code}" for path in sorted(PACKAGE.rglob("*.py"))
               if not any(path.is_relative_to(owner) for owner in owners)
               for line, code in _code_literals(path.read_text(encoding="utf-8"))]
    assert spelled == [], "name these codes by registry.Code: " + ", ".join(spelled)


def test_the_code_literal_scan_sees_a_spelled_code():
    source = (PACKAGE / "pipelines" / "inspect.py").read_text(encoding="utf-8")
    assert _code_literals(source) == []
    assert _code_literals(source + '\nPLANTED = ("DS010", "MEM001", "DS01", "a DS010")\n') == [
        (source.count("\n") + 2, "DS010"), (source.count("\n") + 2, "MEM001")]


def test_selectors_take_codes_prefixes_and_names():
    assert [r.code for r in registry.selected(["DS001"])] == ["DS001"]
    assert {r.code for r in registry.selected(["double-bos", "DS00"], family="DS")} == {f"DS00{i}" for i in range(1, 10)}
    assert "DS002" not in {r.code for r in registry.selected([], ["double-bos"], family="DS")}
    assert {r.family for r in registry.selected(family="DS")} == {"DS"}


def test_a_selector_matching_nothing_is_an_error():
    with pytest.raises(UsageError, match="'DSX' matches no check"):
        registry.selected(["DSX"])
    with pytest.raises(UsageError):
        registry.lookup("no-such-check")


def test_property_tests_have_no_wall_clock_deadline():
    """The suite runs on busy CI machines: the profile conftest loads gives every hypothesis test deadline=None."""
    from hypothesis import settings

    assert settings.default.deadline is None
