"""check-run RUN --compare OTHER: two runs on one axis (step or tokens seen), where they part (RN049), and whether
their eval losses differ by more than noise (RN050); charts of the compared run beside the run's own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mldebug_cli.core.errors import UsageError
from mldebug_cli.pipelines.check_run import build_report


def _log(path: Path, tokens_per_step: int, steps: int, tokens_key: str = "num_tokens") -> str:
    """A run whose loss depends only on the tokens seen: the same data, other batch sizes."""
    history = [{"step": s, "loss": 10 * math.exp(-s * tokens_per_step / 4_000), "learning_rate": 1e-4,
                "grad_norm": 1.0, tokens_key: s * tokens_per_step} for s in range(1, steps + 1)]
    path.write_text(json.dumps({"log_history": history}))
    return str(path)


def _codes(report) -> list[tuple[str, str | None]]:
    return [(f.code, f.location.key) for f in report.findings]


def test_twice_the_batch_parts_by_step_and_matches_by_tokens(tmp_path):
    small = _log(tmp_path / "small.json", 512, 40)
    large = _log(tmp_path / "large.json", 1024, 20, tokens_key="num_input_tokens_seen")  # the HF Trainer's key
    by_step = build_report(small, select=["RN049"], compare=large)
    assert ("RN049", "loss") in _codes(by_step)
    assert "with --align tokens" in by_step.findings[0].hint
    assert build_report(small, select=["RN049"], compare=large, align="tokens").findings == ()


def test_the_compared_run_is_charted_beside_by_step(tmp_path):
    a, b = _log(tmp_path / "a.json", 512, 30), _log(tmp_path / "b.json", 1024, 30)
    report = build_report(a, select=["RN049"], compare=b)
    assert report.context["compared_with"] == f"{b} (aligned by step)"
    from mldebug_cli.core.sections.runlog import RunSection

    charts = RunSection.from_details(report.details).charts
    assert "loss (compared run)" in charts and [p[0] for p in charts["loss (compared run)"]][:3] == [1, 2, 3]


def test_without_tokens_logged_align_tokens_is_one_line(tmp_path):
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0} for s in range(1, 5)]}))
    with pytest.raises(UsageError, match="logs no tokens seen"):
        build_report(str(a), select=["RN049"], compare=str(a), align="tokens")
    with pytest.raises(UsageError, match="--align: unknown axis 'time'"):
        build_report(str(a), select=["RN049"], compare=str(a), align="time")


def test_runs_sharing_no_span_are_one_line(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0} for s in range(1, 5)]}))
    b.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0} for s in range(10, 15)]}))
    with pytest.raises(UsageError, match="share no metric over a common step span"):
        build_report(str(a), select=["RN049"], compare=str(b))
