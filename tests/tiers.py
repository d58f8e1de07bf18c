"""The test tiers (docs/testing.md): pyproject's addopts run the fast tier (``-m "not slow"``, in parallel) and
``-m slow`` the rest. A test marked ``replay`` (a golden or differential replay: one case per parameter set) keeps
``REPLAY_SAMPLE`` evenly spaced cases of each test function in the fast tier (``@pytest.mark.replay(by="suite")``: of
each value of its ``suite`` parameter; ``keep=1``: one case, the first, where each case is costly); its other cases
are marked ``slow``, so the two tiers together run every case once."""

from __future__ import annotations

import pytest

REPLAY_SAMPLE = 4


def mark_replays(items: list[pytest.Item]) -> None:
    """Mark ``slow`` the cases of each ``replay`` test function that are not in its fast-tier sample."""
    groups: dict[tuple[str, str, str], list[pytest.Item]] = {}
    keep: dict[tuple[str, str, str], int] = {}
    for item in items:
        replay = item.get_closest_marker("replay")
        if replay is None or item.get_closest_marker("slow") is not None:
            continue
        by = replay.kwargs.get("by")
        params = item.callspec.params if isinstance(item, pytest.Function) and hasattr(item, "callspec") else {}
        key = (item.nodeid.split("::")[0], getattr(item, "originalname", item.name), repr(params.get(by)) if by else "")
        groups.setdefault(key, []).append(item)
        keep.setdefault(key, replay.kwargs.get("keep", REPLAY_SAMPLE))
    for key, cases in groups.items():
        for index in set(range(len(cases))) - sampled(len(cases), keep[key]):
            cases[index].add_marker(pytest.mark.slow)


def sampled(n: int, k: int) -> set[int]:
    """``k`` evenly spaced indices of ``n`` cases (all of them when ``n <= k``), the first and the last among them."""
    if n <= k:
        return set(range(n))
    return {round(i * (n - 1) / (k - 1)) for i in range(k)} if k > 1 else {0}
