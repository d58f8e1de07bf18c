"""`mldebug check-run` end to end: formats, exit codes, --watch --fail-fast, mldebug.toml, hostile logs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from support import RUNS

MASKED = RUNS / "sft-all-labels-masked"
HEALTHY = RUNS / "sft-healthy"


def check_run(*args: str, env: dict | None = None):
    from mldebug_cli.cli import app

    return CliRunner().invoke(app, ["check-run", *args], env=env)


def test_json_contract_and_exit_code():
    result = check_run(str(MASKED), "-f", "json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["command"] == "check-run" and doc["run"]["kind"] == "sft" and doc["run"]["format"] == "trainer-state"
    (finding,) = [f for f in doc["findings"] if f["code"] == "RN001"]
    assert finding["location"]["step"] == 2 and finding["location"]["step_end"] == 20
    assert finding["location"]["key"] == "loss" and finding["location"]["line"] > 1
    assert doc["series"]["loss"]["points"] == 10 and doc["charts"]["loss"][0] == [2, 0.0]


def test_healthy_run_exits_0_with_a_clean_text_report():
    result = check_run(str(HEALTHY), "--color", "never")
    assert result.exit_code == 0 and "No findings." in result.stdout


def test_text_report_charts_the_metric_with_findings():
    result = check_run(str(MASKED), "--color", "never")
    assert "RN001 zero-loss" in result.stdout and "optimizer step" in result.stdout and "x" in result.stdout


@pytest.mark.parametrize("fmt", ["sarif", "junit", "github", "markdown", "html"])
def test_every_output_format_renders(fmt):
    result = check_run(str(MASKED), "-f", fmt)
    assert result.exit_code == 1 and "RN001" in result.stdout
    if fmt == "sarif":
        doc = json.loads(result.stdout)
        region = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] > 1
    if fmt == "junit":
        ET.fromstring(result.stdout)


def test_fail_on_and_select():
    assert check_run(str(MASKED), "--fail-on", "warning", "--ignore", "RN001").exit_code == 0
    assert check_run(str(MASKED), "--select", "zero-loss", "-f", "json").exit_code == 1


def test_thresholds_from_mldebug_toml(tmp_path):
    entries = [{"step": s, "loss": 0.0, "reward": 0.5, "entropy": 0.02} for s in range(1, 5)]
    run = tmp_path / "trainer_state.json"
    run.write_text(json.dumps({"log_history": entries}))
    config = tmp_path / "mldebug.toml"
    config.write_text('[checks.entropy-collapse]\nmin_entropy = 0.05\n')
    assert check_run(str(run), "--fail-on", "warning").exit_code == 0
    assert check_run(str(run), "--fail-on", "warning", env={"MLDEBUG_CONFIG": str(config)}).exit_code == 1
    config.write_text('[checks.entropy-collapse]\nmin_entropie = 0.05\n')
    result = check_run(str(run), env={"MLDEBUG_CONFIG": str(config)})
    assert result.exit_code == 2 and "did you mean 'min_entropy'" in result.stderr


def test_watch_fail_fast_stops_at_the_first_error():
    result = check_run(str(MASKED), "--watch", "--fail-fast", "--interval", "0.01")
    assert result.exit_code == 1 and result.stdout.startswith("error RN001 zero-loss: steps 2-20")


def test_explain_a_run_check():
    from mldebug_cli.cli import app

    result = CliRunner().invoke(app, ["explain", "RN003"])
    assert result.exit_code == 0 and "OLMo-core" in result.stdout and "Fix" in result.stdout


# --- bad and hostile input ----------------------------------------------------------------------------------------

def one_line_error(result, *needles):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("Error: ") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0]


def test_missing_and_junk_inputs_are_one_line_errors(tmp_path):
    one_line_error(check_run(str(tmp_path / "nope.json")), "nope.json")
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 100)
    one_line_error(check_run(str(junk)), "junk.bin")
    one_line_error(check_run(str(junk), "--format", "tensorboard"), "junk.bin")
    one_line_error(check_run(str(junk), "--format", "parquet"), "parquet")
    cut = tmp_path / "trainer_state.json"
    cut.write_text('{"log_history": [{"loss": 1.0, "st')
    one_line_error(check_run(str(cut)), "trainer_state.json", "line 1")
    one_line_error(check_run(str(HEALTHY), "--vocab-size", "1"), "--vocab-size")
    (tmp_path / "empty").mkdir()
    one_line_error(check_run(str(tmp_path / "empty")), "no trainer_state.json")


def test_huge_numbers_and_nan_everywhere_give_findings(tmp_path):
    entries = [{"step": s, "loss": 1e308 if s % 2 else -1e308, "grad_norm": 1e308, "eval_loss": 1e308} for s in
               range(1, 300)]
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": entries}).replace("1e+308", "1e999"))  # beyond float: Infinity
    result = check_run(str(path), "-f", "json", "--vocab-size", "50000")
    assert result.exit_code == 1 and {"RN002"} <= {f["code"] for f in json.loads(result.stdout)["findings"]}
    nan = tmp_path / "nan" / "trainer_log.jsonl"
    nan.parent.mkdir()
    nan.write_text("".join(json.dumps({"current_steps": s, "loss": math.nan, "lr": math.nan, "reward": math.nan})
                           + "\n" for s in range(1, 200)))
    doc = json.loads(check_run(str(nan.parent), "-f", "json").stdout)
    assert "RN002" in {f["code"] for f in doc["findings"]}
    assert doc["series"]["loss"]["min"] is None  # strict JSON: no NaN in the report


@pytest.mark.slow  # 10 CPU s; the fast tier reads the same format (trainer_log.jsonl) at small sizes above
def test_a_million_step_log_is_checked(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    with path.open("w") as stream:
        for s in range(1, 1_000_001):
            loss = 2.0 / (1 + s / 1e5) + (5.0 if s == 700_000 else 0.0)
            stream.write(f'{{"current_steps": {s}, "total_steps": 1000000, "loss": {loss:.5f}, "lr": 1e-05}}\n')
        stream.write('{"current_steps": 1000001, "loss"')  # killed mid-write
    doc = json.loads(check_run(str(path), "-f", "json").stdout)
    found = {f["code"]: f for f in doc["findings"]}
    assert found["RN003"]["location"]["step"] == 700_000
    assert "RN012" in found and doc["series"]["loss"]["points"] == 1_000_000
    assert len(doc["charts"]["loss"]) <= 400


def test_help_imports_no_heavy_library():
    code = ("import sys; from mldebug_cli.cli import app; from typer.testing import CliRunner; "
            "CliRunner().invoke(app, ['check-run', '--help']); "
            "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'plotext') if m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_config_compares_the_logged_lr_with_the_simulated_schedule():
    states = RUNS.parent / "trainer_state"
    result = check_run(str(states / "per_micro_batch.json"), "--config", str(states / "overlay_config.json"),
                       "-f", "json")
    (finding,) = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "LR009"]
    assert "per micro-batch" in finding["message"]
    clean = json.loads(check_run(str(states / "correct.json"), "--config", str(states / "overlay_config.json"),
                                 "-f", "json").stdout)
    assert not [f for f in clean["findings"] if f["code"] == "LR009"]


def test_gpu_flag_judges_the_logged_peak_memory(tmp_path):
    """RN042 through the CLI: axolotl's logged reserved peak against --gpu; an unknown GPU is exit 2, not a pass."""
    log = [{"step": s, "loss": 1.0, "memory/device_reserved (GiB)": 70.0 if s < 3 else 76.1} for s in range(1, 6)]
    state = tmp_path / "trainer_state.json"
    state.write_text(json.dumps({"log_history": log, "max_steps": 5}))
    doc = json.loads(check_run(str(state), "--gpu", "H100-80GB", "-f", "json", "--select", "RN042").stdout)
    (finding,) = doc["findings"]
    assert finding["location"]["step"] == 3 and "96% of the H100-80GB" in finding["message"]
    assert json.loads(check_run(str(state), "--gpu-memory", "141", "-f", "json", "--select", "RN042").stdout)[
        "findings"] == []
    assert check_run(str(state), "--gpu", "H999").exit_code == 2


@pytest.mark.parametrize("reserved, flagged", [(76.1, True), (70.0, False)])
def test_gpu_flag_judges_torchtunes_logged_peak_memory(tmp_path, reserved, flagged):
    """RN042 on a torchtune log (DiskLogger's ``Step n | key:value`` lines): its peak_memory_reserved, GiB as
    torchtune 0.3.0 and later divide it (get_memory_stats), against --gpu; a run below 90% of the card is quiet."""
    lines = [f"Step {s} | loss:{2.0 - 0.1 * s} lr:2e-05 peak_memory_active:60.0 peak_memory_alloc:62.0 "
             f"peak_memory_reserved:{reserved if s >= 3 else 60.0}" for s in range(1, 6)]
    log = tmp_path / "log_1700000000.txt"
    log.write_text("\n".join(lines) + "\n")
    doc = json.loads(check_run(str(log), "--gpu", "H100-80GB", "-f", "json", "--select", "RN042").stdout)
    if not flagged:
        assert doc["findings"] == []
        return
    (finding,) = doc["findings"]
    assert finding["location"]["step"] == 3 and "peak_memory_reserved peaked at 76.1 GiB" in finding["message"]
    assert "0.2.x logged GB" in finding["message"]
