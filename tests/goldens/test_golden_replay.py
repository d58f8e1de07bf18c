"""Every declared golden suite (tests/goldens/__init__.py), case by case: mldebug gives what the framework itself gave.
The fast tier keeps an evenly spaced sample of each suite (tests/tiers.py; a suite's ``keep``), the slow tier the
rest; ``-k <suite>`` runs one suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.mark import ParameterSet

from goldens import SUITES
from mldebug_cli.frameworks.registry import NAMES
from support import ROOT

BY_NAME = {suite.name: suite for suite in SUITES}


def _cases() -> list[ParameterSet]:
    cases = []
    for suite in SUITES:
        for case in suite.cases():
            cases.append(pytest.param(suite.name, *case.values, id=f"{suite.name}:{case.id}",
                                      marks=[*case.marks, pytest.mark.replay(keep=suite.keep)]))
    return cases


@pytest.mark.replay(by="suite")
@pytest.mark.parametrize(("suite", "case"), _cases())
def test_golden_replay(suite: str, case: object, tmp_path: Path) -> None:
    BY_NAME[suite].replay(case, tmp_path)


def test_every_suite_says_how_its_goldens_were_made() -> None:
    """A suite names a framework of the registry, a tool of tools/ that its command runs, stored goldens, and cases."""
    assert len(BY_NAME) == len(SUITES)
    for suite in SUITES:
        assert suite.framework in NAMES, suite.name
        assert suite.name.startswith(suite.framework), suite.name
        assert (ROOT / suite.tool).is_file() and suite.tool in suite.command, suite.name
        assert suite.fixtures.exists() and suite.fixtures.is_relative_to(ROOT / "fixtures"), suite.name
        assert suite.cases(), suite.name
