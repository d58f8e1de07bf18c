"""`mldebug lr-plot` end to end: the JSON contract, csv, text chart, --plot, exit codes, and no torch."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "fixtures" / "configs"
STATES = REPO / "fixtures" / "trainer_state"
HF_JSON = CONFIGS / "hf_training_args.json"


def lr_plot(*args: str):
    from mldebug_cli.cli import app

    return CliRunner().invoke(app, ["lr-plot", *args])


def as_json(*args: str) -> dict:
    result = lr_plot(*args, "-f", "json")
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_json_contract():
    doc = as_json("--config", str(HF_JSON), "--num-rows", "1000")
    assert doc["command"] == "lr-plot" and doc["framework"] == "transformers"
    import transformers

    assert doc["framework_version"] == transformers.__version__
    assert doc["engine"] == f"transformers {transformers.__version__}"
    assert (doc["total_optimizer_steps"], doc["warmup_steps"]) == (126, 13)  # 63 steps x 2 epochs, ceil(12.6)
    assert (doc["micro_batches_per_epoch"], doc["optimizer_steps_per_epoch"], doc["epochs"]) == (63, 63, 2.0)
    first = doc["schedule"][0]
    assert first["step"] == 1 and first["lr"] == 0.0 and first["epoch"] == pytest.approx(1 / 63)
    assert len(doc["schedule"]) == 126 and isinstance(doc["findings"], list)


def test_csv_has_one_row_per_step_and_the_logged_column_with_an_overlay():
    config = STATES / "overlay_config.json"
    result = lr_plot("--config", str(config), "--num-rows", "40", "-f", "csv",
                     "--trainer-state", str(STATES / "per_micro_batch.json"))
    assert result.exit_code == 1  # LR009 is an error
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == ["step", "micro_batch", "epoch", "lr", "logged_lr"]
    assert [r["step"] for r in rows] == [str(i) for i in range(1, 11)]
    assert rows[0]["lr"] == "0.0" and float(rows[0]["logged_lr"]) == pytest.approx(1e-3)


def test_text_report_has_the_key_numbers_and_a_chart_without_colour():
    result = lr_plot("--config", str(HF_JSON), "--num-rows", "1000", "--color", "never")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "\x1b[" not in out
    for words in ("total optimizer steps (T)", "126", "warmup steps (W)", "optimizer step",
                  "micro-batches consumed (per process)", "P peak", "F final", "warmup end (step 14"):
        assert words in out, words


@pytest.mark.parametrize("suffix,magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_plot_file(tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"lr{suffix}"
    doc = as_json("--config", str(STATES / "overlay_config.json"), "--num-rows", "40", "--plot", str(out),
                  "--trainer-state", str(STATES / "resumed.json"))
    assert doc["plot"] == str(out) and out.read_bytes().startswith(magic)


def test_overlay_explanation_in_json():
    doc = as_json("--config", str(STATES / "per_process_config.json"), "--num-rows", "40", "--world-size", "2",
                  "--trainer-state", str(STATES / "per_process.json"))
    assert doc["overlay"]["explanation"]["kind"] == "per-process"
    [finding] = [f for f in doc["findings"] if f["code"] == "LR009"]
    assert finding["location"]["path"].endswith("per_process.json")


def test_findings_exit_one_and_fail_on():
    config = CONFIGS / "torchtune_llama3_2_1B_lora_single_device.yaml"
    assert lr_plot("--config", str(config), "--num-rows", "2000", "-f", "json").exit_code == 1  # LR001
    clean = lr_plot("--config", str(HF_JSON), "--num-rows", "1000", "-f", "json")
    assert clean.exit_code == 0
    assert lr_plot("--config", str(HF_JSON), "--num-rows", "1000", "--fail-on", "info").exit_code == 1


def test_select_and_ignore():
    config = CONFIGS / "torchtune_llama3_2_1B_lora_single_device.yaml"
    doc = as_json("--config", str(config), "--num-rows", "2000", "--ignore", "LR001,LR003")
    assert {f["code"] for f in doc["findings"]} == {"LR010"}


@pytest.mark.parametrize(
    "args,words",
    [
        (["--config", "missing.json", "--num-rows", "10"], "config file not found"),
        (["--config", str(HF_JSON)], "needs the dataset size"),
        (["--config", str(HF_JSON), "--num-rows", "5", "--dataset", "x.jsonl"], "either --num-rows or --dataset"),
        (["--config", str(HF_JSON), "--num-rows", "5", "--framework", "keras"], "unknown framework"),
    ],
)
def test_unusable_input_exits_two_with_one_error_line(args, words):
    result = lr_plot(*args)
    assert result.exit_code == 2
    assert words in result.stderr and result.stderr.startswith("Error: ") and "Traceback" not in result.stderr


def test_builtin_engine_gives_the_same_schedule():
    args = ("--config", str(CONFIGS / "trl_open_r1_distill_qwen3_8b.yaml"), "--num-rows", "3000")
    real, builtin = as_json(*args), as_json(*args, "--builtin-engine")
    assert builtin["engine"] == "built-in formulas" and real["engine"].startswith("transformers ")
    assert builtin["schedule"] == real["schedule"]


def _run_python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)


def test_works_without_torch():
    args = ["lr-plot", "--config", str(HF_JSON), "--num-rows", "1000", "-f", "json"]
    code = (
        "import sys; sys.modules['torch'] = None\n"  # `import torch` now raises ImportError
        "from mldebug_cli.cli import main\n"
        f"sys.argv = ['mldebug'] + {args!r}\n"
        "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
        "assert sys.modules['torch'] is None\n"
        "sys.exit(code)\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["engine"] == "built-in formulas"
    assert "pip install 'mldebug[schedule]'" in doc["context"]["engine"]  # says how to run the real schedulers
    assert doc["schedule"] == as_json(*args[1:-2])["schedule"]


def test_help_imports_no_heavy_library():
    code = (
        "import sys\nfrom mldebug_cli.cli import app\nfrom typer.testing import CliRunner\n"
        "CliRunner().invoke(app, ['--help']); CliRunner().invoke(app, ['lr-plot', '--help'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'matplotlib', 'plotext', 'accelerate') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = _run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_a_reader_that_stops_early_closes_the_pipe_quietly():
    """`mldebug lr-plot ... -f csv | head -2`: exit 0 and nothing on stderr (was "internal error: BrokenPipeError")."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "mldebug_cli", "lr-plot", "--config", str(HF_JSON), "--num-rows", "200000",
               "--builtin-engine", "-f", "csv"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = [process.stdout.readline() for _ in range(2)]
    process.stdout.close()  # as head does after two lines
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=300) == 0, stderr
    assert first[0].startswith(b"step,") and stderr == ""


@pytest.mark.slow  # a fresh interpreter (imports, the schedule): 3-5 CPU s
def test_lr_plot_on_a_config_keeps_torch_out_of_the_process(tmp_path):
    """At a transformers release whose get_scheduler the built-in formulas are held equal to
    (tests/schedule/test_lr_engines.py), `mldebug lr-plot` on a config imports no torch, peft or trl, and gives the
    report this process gives (which has torch, and names the same engine)."""
    import transformers

    from mldebug_cli.frameworks.hf.schedulers import EXACT_RELEASES

    if transformers.__version__ not in EXACT_RELEASES:
        pytest.skip(f"transformers {transformers.__version__} is not a release the formulas are held equal at")
    out = tmp_path / "lr.json"
    args = ["--config", str(CONFIGS / "hf_training_args.yaml"), "--num-rows", "20000", "-f", "json"]
    code = (
        "import sys\n"
        "from mldebug_cli.cli import main\n"
        f"sys.argv = ['mldebug', 'lr-plot', *{args!r}, '-o', {str(out)!r}, '--exit-zero']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('AFTER', sorted(m for m in ('torch', 'peft', 'trl') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert "AFTER []" in result.stdout, result.stdout[-500:] + result.stderr[-2000:]
    here = lr_plot(*args, "--exit-zero")
    assert json.loads(out.read_text()) == json.loads(here.stdout)
    assert json.loads(out.read_text())["engine"] == f"transformers {transformers.__version__}"
