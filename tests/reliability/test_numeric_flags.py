"""Issue 36 item 7: every numeric flag of every command, enumerated from the typer app itself (a new flag is covered
the day it is added), given negative, zero, NaN, infinite and huge values: a value outside the flag's range is one
``Error:`` line naming the flag (exit 2, before any input is read), a value inside it is taken as given."""

from __future__ import annotations

import math

import pytest
import typer.main

from mldebug_cli.cli import app
from mldebug_cli.cli.flag_ranges import RANGES
from outcomes import run_cli

HOSTILE_VALUES = ["-1", "0", "nan", "inf", "-inf", "1e400", "9" * 40, "0.5"]


def _numeric_flags() -> list[tuple[str, str, str, list[str]]]:
    """(command, flag, int or float, the arguments the command needs besides it) for every numeric option."""
    found = []
    for name, command in typer.main.get_command(app).commands.items():
        needed = []
        for param in command.params:
            if param.required:
                needed += ["missing-input"] if param.param_type_name == "argument" else [param.opts[0], "missing-input"]
        for param in command.params:
            if param.param_type_name == "option" and param.bare_type() in ("int", "float"):
                flag = next(o for o in param.opts if o.startswith("--"))
                found.append((name, flag, param.bare_type(), needed))
    return found


FLAGS = _numeric_flags()


def test_the_app_has_numeric_flags_and_each_has_a_range():
    assert len(FLAGS) >= 20  # inspect-data, lr-plot, preflight, check-run, probe, memory
    assert {flag for _, flag, _, _ in FLAGS} <= set(RANGES)


def _in_range(flag: str, kind: str, value: str) -> bool:
    number = float(value)
    if kind == "int" and (not math.isfinite(number) or number != int(number)):
        return False  # not an integer: typer refuses it
    return RANGES[flag].allows(int(value) if kind == "int" else number)


@pytest.mark.parametrize(("command", "flag", "kind", "needed"), FLAGS, ids=[f"{c} {f}" for c, f, _, _ in FLAGS])
def test_every_hostile_value_is_one_named_error_or_taken(command, flag, kind, needed):
    for value in HOSTILE_VALUES:
        result = run_cli(command, *needed, flag, value)
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, (value, result.stderr)
        assert result.exit_code == 2, (value, result.stderr)  # the dummy inputs do not exist
        assert len(errors) == 1, (value, result.stderr)
        if _in_range(flag, kind, value):
            assert flag not in errors[0], (value, errors[0])  # taken: the run went on to its (missing) inputs
        else:
            assert flag in errors[0], (value, errors[0])  # refused, by name, before the inputs were looked at


def test_the_message_states_the_range():
    result = run_cli("memory", "missing-input", "--gpu-memory", "nan")
    assert result.stderr.strip() == "Error: --gpu-memory must be a number of GiB above 0 and at most 1,048,576, got nan"
    result = run_cli("lr-plot", "-c", "missing-input", "--world-size", "9" * 30)
    assert result.stderr.strip() == f"Error: --world-size must be from 1 to 1,000,000, got {'9' * 30}"
