"""check-run --config: RN051 sets the logged peak beside mldebug memory's estimate, and says in the report why it did
not when the estimate cannot be made (a model without config.json), never a traceback or a silent pass."""

from __future__ import annotations

import json

import pytest

from mldebug_cli.pipelines.check_run import build_report
from support import FIXTURES, QWEN25, write_jsonl


def _run(tmp_path, model_line: str):
    write_jsonl(tmp_path / "data.jsonl", [{"text": f"Row {i} of the run's data."} for i in range(8)])
    (tmp_path / "config.yaml").write_text(f"model_name_or_path: {model_line}\ndataset_name: data.jsonl\n"
                                          "dataset_text_field: text\nper_device_train_batch_size: 2\n"
                                          "gradient_accumulation_steps: 1\nmax_length: 64\nbf16: true\n")
    history = [{"step": s, "loss": 2 - 0.1 * s, "memory/max_allocated (GiB)": 3.0} for s in range(1, 6)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    return str(tmp_path / "trainer_state.json"), str(tmp_path / "config.yaml")


@pytest.mark.slow  # mldebug memory reads the config's trainer facts (seconds)
def test_a_model_without_config_json_is_a_note_not_a_finding(tmp_path):
    run, config = _run(tmp_path, str(QWEN25))
    report = build_report(run, config=config, select=["RN051"])
    assert report.findings == ()
    assert "RN051 not run: mldebug memory could not estimate" in report.context["memory_estimate"]
    assert "--model DIR" in report.context["memory_estimate"]
    with_model = build_report(run, config=config, select=["RN051"], model=str(FIXTURES / "memory-models" / "qwen2.5-0.5b"))
    (finding,) = with_model.findings
    assert finding.code == "RN051" and "mldebug memory's estimate of" in finding.message
    assert with_model.context["memory_estimate"].endswith("as mldebug encodes them for this config)")


def test_no_estimate_is_made_when_the_run_logs_no_memory(tmp_path):
    run, config = _run(tmp_path, str(QWEN25))
    (tmp_path / "trainer_state.json").write_text(json.dumps({"log_history": [{"step": 1, "loss": 2.0}]}))
    report = build_report(run, config=config, select=["RN051"])
    assert report.findings == () and report.context["memory_estimate"] is None
