"""A pytest plugin that records each test's CPU time, for ``benchmarks/bench_tiers.py`` (not a test module).

    python -m pytest -q -p cpu_cost --junitxml=run.xml      # with benchmarks/ on PYTHONPATH

A test's CPU time is what its process and its waited-for child processes spent, user and system, from the start of
its set-up to the end of its tear-down (so a module- or session-scoped fixture counts in the first test that asks
for it). It is added to the test's report as the user property ``cpu_s``, which ``--junitxml`` writes as a
``<property>``; ``tier`` records whether the test was marked ``slow`` when it ran. On a loaded machine a test's
wall time is mostly waiting for a core; its CPU time is what it costs. With ``CPU_COST_LOG=FILE`` each test's line
(CPU seconds, wall seconds, tier, node id; tab-separated) is also appended to FILE as it ends, so a run stopped before its end
still leaves what it measured (``bench_tiers.py`` reads such a file as well as a junit file).
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Generator

import pytest

_STARTED = pytest.StashKey[tuple[float, float]]()


def _cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    item.stash[_STARTED] = (_cpu(), time.perf_counter())
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    if call.when == "teardown" and _STARTED in item.stash:
        cpu_start, wall_start = item.stash[_STARTED]
        cpu, wall = _cpu() - cpu_start, time.perf_counter() - wall_start
        tier = "slow" if item.get_closest_marker("slow") else "fast"
        item.user_properties.extend([("cpu_s", f"{cpu:.4f}"), ("tier", tier)])
        if os.environ.get("CPU_COST_LOG"):
            with open(os.environ["CPU_COST_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{cpu:.4f}\t{wall:.4f}\t{tier}\t{item.nodeid}\n")
    return (yield)
