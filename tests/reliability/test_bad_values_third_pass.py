"""Issue 36, items 5-7: every bad value the third hostile pass found is a one-line error naming the file and key
(or a finding), never a native crash, an "internal error" or a silent pass. Inputs built in tmp_path."""

from __future__ import annotations

import pytest

from outcomes import assert_one_line_error, run_cli, run_cli_process, unchanged

FINITE_HINT = "every scheduler setting and the learning rate must be finite numbers"


def _config(tmp_path, text: str):
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path


def test_a_nan_scheduler_power_is_a_one_line_error_not_a_native_crash(tmp_path):
    config = _config(tmp_path, "learning_rate: 0.0001\nlr_scheduler_type: polynomial\n"
                               "lr_scheduler_kwargs: {power: .nan}\nmax_steps: 100\nwarmup_steps: 10\n")
    with unchanged(config):
        code, _, stderr, _ = run_cli_process("lr-plot", "-c", config)
    assert_one_line_error(code, stderr, f"{config}: lr_scheduler_type polynomial with lr_scheduler_kwargs {{power: nan}}"
                          " gives a learning rate of nan at step 12, not a finite number", FINITE_HINT)


@pytest.mark.parametrize(("line", "key", "shown"), [
    ("learning_rate: .nan", "learning_rate", "nan"),
    ("learning_rate: .inf", "learning_rate", "inf"),
    ("num_train_epochs: .inf", "num_train_epochs", "inf"),
    ("num_train_epochs: '1e999'", "num_train_epochs", "'1e999'"),
    ("per_device_train_batch_size: .nan", "per_device_train_batch_size", "nan"),
])
def test_non_finite_rates_epochs_and_batch_sizes_are_one_line_errors_at_their_line(tmp_path, line, key, shown):
    text = {"learning_rate": "learning_rate: 0.001", "num_train_epochs": "num_train_epochs: 1",
            "per_device_train_batch_size": "per_device_train_batch_size: 2"}
    text[key] = line
    config = _config(tmp_path, "\n".join(text.values()) + "\n")
    number = list(text).index(key) + 1
    with unchanged(config):
        result = run_cli("lr-plot", "-c", config, "--num-rows", "100", "-f", "json")
    if result.exit_code == 1:  # a number written as text is CF002 too: then the error is the schedule's note
        assert f"line {number}: {key} must be a finite number, got {shown}" in result.stdout
    else:
        assert_one_line_error(result.exit_code, result.stderr, f"{config}: line {number}: {key} must be a finite number,"
                              f" got {shown}")
