"""The probe checks' case files (tests/checks/cases/GP*.yml), run as tests/checks/test_case_files.py runs every other
case file, in a module of their own. The first case of each GP check is in the fast tier, the others in the slow tier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_case_files import PROBE_PARAMS, run_case


@pytest.mark.parametrize("command,code,case", PROBE_PARAMS)
def test_case(command: str, code: str, case: dict[str, Any], tmp_path: Path, request) -> None:
    run_case(command, code, case, tmp_path, request)
