"""Bounded work on plausible input: a billion-step schedule, a huge Go template, a CSV dataset of many columns."""

from __future__ import annotations

import json

from mldebug_cli.render.gotemplate.exec import MAX_SOURCE_CHARS, MAX_TOKENS
from mldebug_cli.schedule.engine import EDGE_STEPS, MAX_SCHEDULE_STEPS, SAMPLED_POINTS
from outcomes import assert_one_line_error, run_cli, unchanged
from support import QWEN25

CONFIG = "learning_rate: 2.0e-5\nper_device_train_batch_size: 16\nlr_scheduler_type: cosine\nwarmup_steps: 100\n"


def test_a_billion_step_schedule_is_exact_in_its_counts_and_sampled_in_its_curve(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text(CONFIG + "max_steps: 1000000000\n")
    with unchanged(config):
        result = run_cli("lr-plot", "-c", config, "-f", "json", "--builtin-engine")
    report = json.loads(result.stdout)
    assert report["total_optimizer_steps"] == 1_000_000_000
    schedule = report["schedule"]
    assert len(schedule) <= SAMPLED_POINTS + 3 * EDGE_STEPS + 1
    assert [p["step"] for p in schedule[:3]] == [1, 2, 3] and schedule[-1]["step"] == 1_000_000_000
    peak = max(schedule, key=lambda p: p["lr"])
    assert (peak["step"], peak["lr"]) == (101, 2e-5)  # warmup's end is computed exactly
    assert schedule[-1]["lr"] == 0.0
    assert f"every step past {MAX_SCHEDULE_STEPS:,} is too many to list" in json.dumps(report)


def test_a_schedule_under_the_bound_is_computed_at_every_step(tmp_path):
    config = tmp_path / "train.yaml"
    config.write_text(CONFIG + "max_steps: 5000\n")
    report = json.loads(run_cli("lr-plot", "-c", config, "-f", "json", "--builtin-engine").stdout)
    assert [p["step"] for p in report["schedule"]] == list(range(1, 5001))


def test_a_modelfile_template_over_the_parse_limits_is_a_one_line_error(tmp_path):
    messages = tmp_path / "m.json"
    messages.write_text('[{"role": "user", "content": "hi"}]')
    for name, template, reason in [
        ("long", "{{ .Prompt }}" * (MAX_SOURCE_CHARS // 10), f"the template is {13 * (MAX_SOURCE_CHARS // 10):,} "
         f"characters long, over the {MAX_SOURCE_CHARS:,} mldebug parses"),
        ("many", "{{.}}" * (MAX_TOKENS + 1), f"the template has {MAX_TOKENS + 1:,} actions, over the {MAX_TOKENS:,} "
         "mldebug parses"),
    ]:
        modelfile = tmp_path / f"Modelfile.{name}"
        modelfile.write_text(f'FROM llama3:8b\nTEMPLATE """{template}"""\n')
        result = run_cli("render", "--modelfile", modelfile, "-m", messages, "-e", "ollama")
        assert_one_line_error(result.exit_code, result.stderr, f"{modelfile}: TEMPLATE is not read: {reason}")


def test_a_csv_dataset_of_a_million_columns_is_a_one_line_error(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n" + ",".join("x" for _ in range(1_000_000)) + "\n")
    result = run_cli("inspect-data", path, "-t", QWEN25)
    assert_one_line_error(result.exit_code, result.stderr,
                          f"{path}:1: the header has 1,000,000 columns; mldebug reads datasets of up to 10,000")


def test_a_modelfile_over_4_mib_is_a_one_line_error(tmp_path):
    messages = tmp_path / "m.json"
    messages.write_text('[{"role": "user", "content": "hi"}]')
    modelfile = tmp_path / "Modelfile"
    modelfile.write_text("FROM llama3:8b\n" + "# padding\n" * 500_000)
    result = run_cli("render", "--modelfile", modelfile, "-m", messages, "-e", "ollama")
    assert_one_line_error(result.exit_code, result.stderr, f"{modelfile}: the Modelfile is over 4 MiB, more than mldebug "
                          "reads (real ones are a few KiB; a template is at most 1,000,000 characters)")
