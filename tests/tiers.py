"""The test tiers (docs/testing.md): pyproject's addopts run the fast tier (``-m "not slow"``, in parallel) and
``-m slow`` the rest. A test marked ``replay`` (a golden or differential replay: one case per parameter set) keeps
``REPLAY_SAMPLE`` evenly spaced cases of each test function in the fast tier (``@pytest.mark.replay(by="suite")``: of
each value of its ``suite`` parameter; ``keep=1``: one case, the first, where each case is costly; a case's own
``replay(keep=...)`` mark sets its group's, ``keep=None`` keeping every case not already marked slow); its other cases
are marked ``slow``, so the two tiers together run every case once.

A property test (hypothesis) in the fast tier runs a fifth of its examples (``fast_examples``: at least 10, never more
than its own count); ``--hypothesis-profile=full`` runs every property test at its own count (CI does, in a step of
its own), as does the slow tier for the property tests marked ``slow``."""

from __future__ import annotations

import pytest
from hypothesis import settings

REPLAY_SAMPLE = 4
FULL_PROFILE = "full"  # --hypothesis-profile=full: every property test at its own max_examples


FAST_SHARE, FAST_MIN = 5, 10  # the fast tier runs 1/FAST_SHARE of a property test's examples, at least FAST_MIN


def fast_examples(count: int) -> int:
    """How many examples a property test of ``count`` examples runs in the fast tier."""
    return min(count, max(FAST_MIN, count // FAST_SHARE))


def mark_replays(items: list[pytest.Item]) -> None:
    """Mark ``slow`` the cases of each ``replay`` test function that are not in its fast-tier sample."""
    groups: dict[tuple[str, str, str], list[pytest.Item]] = {}
    keep: dict[tuple[str, str, str], int | None] = {}
    for item in items:
        replay = item.get_closest_marker("replay")
        if replay is None or item.get_closest_marker("slow") is not None:
            continue
        by = replay.kwargs.get("by")
        params = item.callspec.params if isinstance(item, pytest.Function) and hasattr(item, "callspec") else {}
        key = (item.nodeid.split("::")[0], getattr(item, "originalname", item.name), repr(params.get(by)) if by else "")
        groups.setdefault(key, []).append(item)
        own = [mark for mark in getattr(getattr(item, "callspec", None), "marks", ()) if mark.name == "replay"]
        keep.setdefault(key, (own[0] if own else replay).kwargs.get("keep", REPLAY_SAMPLE))
    for key, cases in groups.items():
        if keep[key] is None:
            continue
        for index in set(range(len(cases))) - sampled(len(cases), keep[key]):
            cases[index].add_marker(pytest.mark.slow)


def sampled(n: int, k: int) -> set[int]:
    """``k`` evenly spaced indices of ``n`` cases (all of them when ``n <= k``), the first and the last among them."""
    if n <= k:
        return set(range(n))
    return {round(i * (n - 1) / (k - 1)) for i in range(k)} if k > 1 else {0}


def fewer_examples(items: list[pytest.Item]) -> None:
    """Run each property test of the fast tier (not marked ``slow``) at ``fast_examples`` of its count, unless the
    hypothesis profile is ``full``. Its own ``@settings`` stay the parent of the new ones (deadline, health checks,
    phases, derandomize): only ``max_examples`` changes."""
    if settings.get_current_profile_name() == FULL_PROFILE:
        return
    done: set[int] = set()
    for item in items:
        test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        if not getattr(test, "is_hypothesis_test", False) or item.get_closest_marker("slow") or id(test) in done:
            continue
        done.add(id(test))
        own: settings = test._hypothesis_internal_use_settings  # what @given/@settings stored; read at each call
        test._hypothesis_internal_use_settings = settings(own, max_examples=fast_examples(own.max_examples))
