"""What a golden suite declares: how its goldens were made (the tool, its command, where they are stored), its cases
and how one case is replayed against mldebug. ``tests/goldens/test_golden_replay.py`` runs every declared suite."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _pytest.mark import ParameterSet

from tiers import REPLAY_SAMPLE


@dataclass(frozen=True)
class GoldenSuite:
    """One framework's goldens of one kind, replayed case by case."""

    name: str  # the suite's name in the replay test's ids: "<framework>-<what>"
    framework: str  # the --framework name (mldebug_cli/frameworks/lines.py) whose own output the goldens are
    tool: str  # the script under tools/ that ran the real framework and wrote them
    command: str  # how the tool was run to write them (from its docstring)
    fixtures: Path  # the folder or file they are stored in
    cases: Callable[[], Sequence[ParameterSet]]  # one pytest.param per case: one value, its id, its own marks
    replay: Callable[[Any, Path], None]  # (a case's value, a scratch folder): asserts mldebug agrees with the case
    keep: int | None = REPLAY_SAMPLE  # cases kept in the fast tier (tests/tiers.py); None: every case not marked slow
