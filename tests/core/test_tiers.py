"""The test tiers (tests/tiers.py): a replay test keeps an evenly spaced sample of its cases in the fast tier and
the rest in the slow tier, so that the two tiers together run every case exactly once."""

from __future__ import annotations

import pytest

from tiers import REPLAY_SAMPLE, sampled

pytest_plugins = ["pytester"]

CASES = 10
MODULE = f"""
import pytest

@pytest.mark.replay
@pytest.mark.parametrize("case", range({CASES}))
def test_golden(case):
    pass

@pytest.mark.replay
@pytest.mark.parametrize("case", range(2))
def test_small_golden(case):
    pass

@pytest.mark.replay(by="suite")
@pytest.mark.parametrize(("suite", "case"), [(s, c) for s in "ab" for c in range({CASES})])
def test_suites(suite, case):
    pass

@pytest.mark.slow
def test_whole_replay():
    pass

def test_unit():
    pass
"""
CONFTEST = """
import pytest
from tiers import mark_replays

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_replays(items)

def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slow")
    config.addinivalue_line("markers", "replay: replay")
"""


def _selected(pytester: pytest.Pytester, expression: str) -> set[str]:
    result = pytester.runpytest("-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-m", expression, "--collect-only")
    return {line.split("::", 1)[1] for line in result.outlines if "::" in line}


def test_the_two_tiers_split_every_case_between_them_once(pytester: pytest.Pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_replays=MODULE)
    fast, slow = _selected(pytester, "not slow"), _selected(pytester, "slow")
    assert not fast & slow
    assert len(fast | slow) == CASES + 2 + 2 * CASES + 2
    kept = sampled(CASES, REPLAY_SAMPLE)
    assert fast == ({f"test_golden[{i}]" for i in kept} | {f"test_suites[{s}-{i}]" for s in "ab" for i in kept}
                    | {"test_small_golden[0]", "test_small_golden[1]", "test_unit"})
    assert "test_whole_replay" in slow


@pytest.mark.parametrize(("n", "k", "want"), [(10, 4, {0, 3, 6, 9}), (3, 4, {0, 1, 2}), (7, 1, {0}), (2, 2, {0, 1})])
def test_the_sample_is_evenly_spaced_with_the_first_and_last_case(n, k, want):
    assert sampled(n, k) == want
