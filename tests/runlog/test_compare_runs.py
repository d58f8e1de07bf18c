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


def _epoch_log(path: Path, rows_per_step: int, rows: int, epochs: int = 2) -> str:
    """A run over a dataset of ``rows`` rows whose loss depends only on the samples seen, logging the Trainer's
    fractional ``epoch`` (steps / steps per epoch) with each record."""
    per_epoch = rows // rows_per_step
    history = [{"step": s, "epoch": s / per_epoch, "loss": 10 * math.exp(-s * rows_per_step / 300),
                "learning_rate": 1e-4, "grad_norm": 1.0} for s in range(1, per_epoch * epochs + 1)]
    path.write_text(json.dumps({"log_history": history}))
    return str(path)


def test_twice_the_batch_parts_by_step_and_matches_by_samples_seen(tmp_path):
    small = _epoch_log(tmp_path / "small.json", 8, 640)  # 80 steps an epoch
    large = _epoch_log(tmp_path / "large.json", 32, 640)  # batch 4 × accumulation 4 × 2 processes: 20 steps an epoch
    assert ("RN049", "loss") in _codes(build_report(small, select=["RN049"], compare=large))
    by_samples = build_report(small, select=["RN049"], compare=large, align="samples")
    assert by_samples.findings == () and by_samples.context["compared_with"] == f"{large} (aligned by samples)"
    parted = _epoch_log(tmp_path / "parted.json", 32, 640)  # the same batch, a loss that stops falling mid-way
    history = json.loads(Path(parted).read_text())["log_history"]
    for entry in history[len(history) // 2:]:
        entry["loss"] = history[len(history) // 2]["loss"]
    Path(parted).write_text(json.dumps({"log_history": history}))
    found = build_report(small, select=["RN049"], compare=parted, align="samples")
    assert [f.code for f in found.findings] == ["RN049"] and "the runs part at epoch 1." in found.findings[0].message


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
    with pytest.raises(UsageError, match="records no wall-clock time per step"):
        build_report(str(a), select=["RN049"], compare=str(a), align="time")
    with pytest.raises(UsageError, match="--align samples: .* logs no epoch"):
        build_report(str(a), select=["RN049"], compare=str(a), align="samples")
    with pytest.raises(UsageError, match="--align: unknown axis 'rows'"):
        build_report(str(a), select=["RN049"], compare=str(a), align="rows")


def test_runs_sharing_no_span_are_one_line(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0} for s in range(1, 5)]}))
    b.write_text(json.dumps({"log_history": [{"step": s, "loss": 1.0} for s in range(10, 15)]}))
    with pytest.raises(UsageError, match="share no metric over a common step span"):
        build_report(str(a), select=["RN049"], compare=str(b))


def _timed_log(path: Path, seconds_per_step: int, steps: int, by_step: bool = False) -> str:
    """A LLaMA-Factory trainer_log.jsonl whose loss depends only on the wall-clock time (``elapsed_time``), or
    (``by_step``) only on the step."""
    lines = []
    for s in range(1, steps + 1):
        t = s * seconds_per_step
        x = s * 10 if by_step else t
        lines.append({"current_steps": s, "total_steps": steps, "loss": 10 * math.exp(-x / 200), "lr": 1e-4,
                      "elapsed_time": f"{t // 3600}:{t % 3600 // 60:02d}:{t % 60:02d}"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_a_slower_run_parts_by_step_and_matches_by_wall_clock(tmp_path):
    fast = _timed_log(tmp_path / "fast.jsonl", 10, 60)
    slow = _timed_log(tmp_path / "slow.jsonl", 20, 30)
    by_step = build_report(fast, select=["RN049"], compare=slow)
    assert ("RN049", "loss") in _codes(by_step)
    by_time = build_report(fast, select=["RN049"], compare=slow, align="time")
    assert by_time.findings == () and by_time.context["compared_with"] == f"{slow} (aligned by time)"
    faster = _timed_log(tmp_path / "faster.jsonl", 5, 60, by_step=True)  # the same curve by step, twice as fast
    (found,) = build_report(fast, select=["RN049"], compare=faster, align="time").findings
    assert found.message.startswith("loss: the runs part at ") and " s (" in found.message and found.location.step is None


@pytest.mark.parametrize("store", ["mlruns", "mlflow.db"])
def test_a_real_mlflow_run_carries_its_wall_clock(store):
    from mldebug_cli.sources.runlog import read_run
    from support import RUNS

    run = read_run(str(RUNS / "sft-mlflow" / store))
    times = [run.times[s] for s in sorted(run.times)]
    assert len(times) >= 5 and times == sorted(times) and set(run.get("loss").steps) <= set(run.times)
    pair = build_report(str(RUNS / "sft-mlflow" / store), select=["RN049", "RN050"],
                        compare=str(RUNS / "sft-mlflow" / store), align="time")
    assert pair.findings == () or all(f.code == "RN050" for f in pair.findings)


@pytest.mark.parametrize("log", ["wandb-offline__stanford-alpaca.run-argq0i8h.wandb", "hf-sft__serial-lain-ai/runs",
                                 "lf-sft__qwen25-medical.trainer_log.jsonl"])
def test_real_wandb_tensorboard_and_llama_factory_logs_carry_their_wall_clock(log):
    from mldebug_cli.sources.runlog import read_run
    from support import CORPUS_RUNS, HAVE_CORPUS

    if not HAVE_CORPUS:
        pytest.skip("the shared corpus is not here (MLDEBUG_CORPUS)")
    run = read_run(str(CORPUS_RUNS / log))
    times = [run.times[s] for s in sorted(run.times)]
    assert len(times) >= 5 and times == sorted(times), times[:5]
    assert set(run.get("loss").steps) <= set(run.times)


def test_real_trainer_runs_align_by_the_epoch_they_log():
    from support import RUNS

    report = build_report(str(RUNS / "sft-lr-base"), select=["RN049"], compare=str(RUNS / "sft-lr-100x"), align="samples")
    assert report.context["compared_with"].endswith("(aligned by samples)")
    loss = next(f for f in report.findings if f.location.key == "loss")
    assert loss.message.startswith("loss: the runs part at epoch ") and "end at epoch 3.00" in loss.message
