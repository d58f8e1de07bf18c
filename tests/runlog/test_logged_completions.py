"""TRL's log_completions tables (``completions/completions_<step>.parquet``) read beside a run: RN047 on empty and
identical completions, quiet on varied ones, and a table that cannot be read is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mldebug_cli.core.errors import InputError
from mldebug_cli.pipelines.check_run import build_report


def _run(folder: Path, groups_per_step: list[list[list[str]]]) -> str:
    """A trainer_state.json and one completions table per step, in TRL 1.16's columns (step, prompt, completion,
    one column per reward function, advantage)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "completions").mkdir(parents=True)
    history = []
    for step, groups in enumerate(groups_per_step, start=1):
        prompts = [f"prompt {g}" for g, group in enumerate(groups) for _ in group]
        completions = [c for group in groups for c in group]
        pq.write_table(pa.table({"step": [step] * len(prompts), "prompt": prompts, "completion": completions,
                                 "length_reward": [len(c) / 10 for c in completions],
                                 "advantage": [0.0] * len(prompts)}), folder / "completions" / f"completions_{step:05d}.parquet")
        history.append({"step": step, "loss": 0.0, "reward": 0.3, "reward_std": 0.2, "grad_norm": 0.1,
                        "completions/mean_length": 5.0})
    (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return str(folder / "trainer_state.json")


def _rn047(path: str) -> list:
    return [f for f in build_report(path, select=["RN047"]).findings if f.code == "RN047"]


def test_mostly_empty_completions_fire(tmp_path):
    (finding,) = _rn047(_run(tmp_path, [[["", " ", "ok", ""], ["", "", "", "x"]]] * 2))
    assert "12 of 16 logged completions (steps 1-2) are empty" in finding.message


def test_identical_groups_fire_and_the_folder_is_named(tmp_path):
    path = _run(tmp_path, [[["4", "4", "4", "4"], ["Paris", "Paris", "Paris", "Paris"], ["a", "b", "a", "a"]]] * 2)
    (finding,) = _rn047(path)
    assert finding.message.startswith("4 of 6 logged prompt groups (steps 1-2) have identical completions")
    assert finding.location.path == str(tmp_path / "completions")


def test_varied_completions_are_quiet_and_counted(tmp_path):
    path = _run(tmp_path, [[["4", "5", "four", ""], ["Paris", "Lyon", "paris!", "Nice"]]] * 3)
    report = build_report(path, select=["RN047"])
    assert [f for f in report.findings if f.code == "RN047"] == []
    assert report.context["completions"].startswith("24 completions in 6 prompt groups, 3 tables of")


def test_a_table_that_cannot_be_read_is_one_line(tmp_path):
    path = _run(tmp_path, [[["a", "b"]]])
    (tmp_path / "completions" / "completions_00002.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="completions_00002.parquet: cannot read the completions table"):
        build_report(path, select=["RN047"])
