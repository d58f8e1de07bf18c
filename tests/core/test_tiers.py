"""The test tiers (tests/tiers.py): a replay test keeps an evenly spaced sample of its cases in the fast tier (a
case's own ``replay(keep=...)`` mark sets its suite's sample: the golden harness's suites) and the rest in the slow
tier, so that the two tiers together run every case exactly once; and the fast tier keeps at least one test of every
check, command, output format and framework of the registries."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT
from tiers import FULL_PROFILE, REPLAY_SAMPLE, fast_examples, sampled

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

@pytest.mark.replay(by="code", keep=1)
@pytest.mark.parametrize(("code", "case"), [(c, i) for c in "xy" for i in range(3)])
def test_case_files(code, case):
    pass

@pytest.mark.replay(by="suite")
@pytest.mark.parametrize(("suite", "case"), [pytest.param("c", i, marks=pytest.mark.replay(keep=None)) for i in range(6)]
                         + [pytest.param("d", i, marks=pytest.mark.replay(keep=2)) for i in range(6)]
                         + [pytest.param("e", i, marks=[pytest.mark.replay(keep=None), pytest.mark.slow]) for i in range(2)])
def test_declared(suite, case):
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
    assert len(fast | slow) == CASES + 2 + 2 * CASES + 6 + 14 + 2
    kept = sampled(CASES, REPLAY_SAMPLE)
    assert fast == ({f"test_golden[{i}]" for i in kept} | {f"test_suites[{s}-{i}]" for s in "ab" for i in kept}
                    | {"test_small_golden[0]", "test_small_golden[1]", "test_unit", "test_case_files[x-0]",
                       "test_case_files[y-0]"}
                    | {f"test_declared[c-{i}]" for i in range(6)} | {"test_declared[d-0]", "test_declared[d-5]"})
    assert "test_whole_replay" in slow


@pytest.mark.parametrize(("n", "k", "want"), [(10, 4, {0, 3, 6, 9}), (3, 4, {0, 1, 2}), (7, 1, {0}), (2, 2, {0, 1})])
def test_the_sample_is_evenly_spaced_with_the_first_and_last_case(n, k, want):
    assert sampled(n, k) == want


PROPERTIES = """
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st


def count(name):
    with open(Path(__file__).with_name(name), "a") as file:
        file.write("x")


@given(st.integers())
def test_default_count(n):
    count("default")


@settings(max_examples=300, database=None)
@given(st.integers())
def test_own_count(n):
    count("own")


@pytest.mark.slow
@settings(max_examples=30, database=None)
@given(st.integers())
def test_slow_property(n):
    count("slow")
"""
PROFILES = """
import pytest
from hypothesis import settings
from tiers import fewer_examples

settings.register_profile("mldebug", database=None)
settings.register_profile("full", database=None)
settings.load_profile("mldebug")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    fewer_examples(items)


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slow")
"""


def _examples(pytester: pytest.Pytester, *args: str) -> dict[str, int]:
    for name in ("default", "own", "slow"):
        (pytester.path / name).unlink(missing_ok=True)
    result = pytester.runpytest("-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-m", "slow or not slow", *args)
    result.assert_outcomes(passed=3)
    return {name: len((pytester.path / name).read_text()) for name in ("default", "own", "slow")}


def test_the_fast_tier_runs_a_fifth_of_each_property_tests_examples_and_the_full_profile_all(pytester: pytest.Pytester):
    pytester.makeconftest(PROFILES)
    pytester.makepyfile(test_properties=PROPERTIES)
    assert _examples(pytester) == {"default": fast_examples(100), "own": fast_examples(300), "slow": 30}
    assert _examples(pytester, f"--hypothesis-profile={FULL_PROFILE}") == {"default": 100, "own": 300, "slow": 30}
    assert (fast_examples(100), fast_examples(300), fast_examples(30), fast_examples(8)) == (20, 60, 10, 8)


# --- the coverage rule: the fast tier keeps a test of every check, command, output format and framework -------------

FAST = "not slow"


def _fast_tier_ids(request: pytest.FixtureRequest) -> list[str]:
    """The node ids of the fast tier: this session's own when it is the whole fast tier (the README's command, in any
    worker), else a collection of it in a child process."""
    config = request.config
    whole = ({Path(a).resolve() for a in config.args} == {ROOT / "tests"} and config.option.markexpr == FAST
             and not config.option.keyword and not getattr(config.option, "lf", False))
    if whole:
        return [item.nodeid for item in request.session.items]
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                          "-m", FAST, "tests"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return [line.strip() for line in out.stdout.splitlines() if "::" in line]


CATALOGUE_ONLY = ("tests/core/test_registry.py", "tests/core/test_check_signatures.py")  # name every check, test none


def _tested(name: str, texts: list[str]) -> bool:
    """A text names it as a word (``DS001``, ``inspect-data`` or ``inspect_data``, ``llama_factory``)."""
    variants = {name, name.replace("-", "_"), name.replace("_", "-")}
    joined = "\n".join(texts)
    return any(re.search(rf"(?<![A-Za-z0-9]){re.escape(v)}(?![A-Za-z0-9])", joined) for v in variants)


def test_the_fast_tier_keeps_a_test_of_every_check_command_format_and_framework(request: pytest.FixtureRequest):
    """Moving tests to the slow tier may not drop a whole area: each name of the registries is in a fast test's id
    (a check's code may instead be in the code of a module with fast tests)."""
    from mldebug_cli.cli import app
    from mldebug_cli.core.registry import REGISTRY
    from mldebug_cli.formats import FORMATS
    from mldebug_cli.frameworks.registry import NAMES

    ids = _fast_tier_ids(request)
    tested = [i for i in ids if not i.startswith(CATALOGUE_ONLY)]
    # a check is tested in the fast tier where a fast test's id names it (a case file's case) or a test module with
    # fast tests names it in its code (a check without a case file, tested by a module of its command)
    modules = sorted({i.split("::")[0] for i in tested})
    sources = [(ROOT / m).read_text(encoding="utf-8") for m in modules if (ROOT / m).is_file()]
    anywhere = [path.read_text(encoding="utf-8") for pattern in ("**/*.py", "checks/cases/*.yml")
                for path in (ROOT / "tests").glob(pattern) if not str(path.relative_to(ROOT)).startswith(CATALOGUE_ONLY)]
    codes = [ref.code for ref in REGISTRY if _tested(ref.code, anywhere)]  # those some test names (in either tier)
    areas = {"check": (codes, tested + sources),
             "command": ([command.name for command in app.registered_commands if command.name], tested),
             "format": (list(FORMATS), tested), "framework": (list(NAMES), tested)}
    assert all(names for names, _ in areas.values()) and len(codes) > 100 and len(modules) > 50, (areas, len(modules))
    missing = {area: [n for n in names if not _tested(n, texts)] for area, (names, texts) in areas.items()}
    assert not any(missing.values()), f"the fast tier has no test of {missing}"


def test_an_xdist_worker_runs_torch_on_its_share_of_the_cores():
    """With a worker per core, torch's default (a thread per core in every worker) oversubscribes the cores
    (tests/conftest.py)."""
    import os

    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not count:
        pytest.skip("not in an xdist worker (run with -n 2 or the README's command)")
    torch = pytest.importorskip("torch")
    share = max(1, (os.cpu_count() or 1) // int(count))
    assert torch.get_num_threads() == int(os.environ.get("OMP_NUM_THREADS", share))
    assert os.environ.get("OMP_NUM_THREADS") is not None
