"""--trainer-state: real loops that make each mistake, and the explanation lr-plot gives for their logs."""

from __future__ import annotations

import json

import lr_loops
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def overlay_of(simulate_config, state_path, config=None, world_size=1):
    from dataclasses import replace

    from mldebug_cli.schedule.overlay import compare

    simulation = simulate_config(config or lr_loops.OVERLAY_CONFIG, lr_loops.OVERLAY_ROWS, world_size=world_size)
    return replace(simulation, overlay=compare(simulation, str(state_path)))


def lr009(simulation):
    from mldebug_cli.core import registry

    check = registry.load(registry.lookup("LR009"))
    return list(check.findings(simulation, None))


def test_a_correct_loop_matches_the_simulation(tmp_path, simulate_config):
    simulation = overlay_of(simulate_config, lr_loops.correct_loop(tmp_path / "state.json"))
    assert simulation.overlay.mismatched == 0 and simulation.overlay.explanation is None
    assert lr009(simulation) == []


@pytest.mark.parametrize(
    "loop,kind,words",
    [
        (lr_loops.per_micro_batch_loop, "per-micro-batch", "stepped per micro-batch"),
        (lr_loops.logged_after_step_loop, "one-step-off", "logged one step off"),
        (lr_loops.resumed_loop, "resumed", "resumed with another config"),
        (lr_loops.skipped_fp16_loop, "skipped-steps", "skipped fp16 steps"),
    ],
)
def test_each_mistake_is_named(tmp_path, simulate_config, loop, kind, words):
    simulation = overlay_of(simulate_config, loop(tmp_path / "state.json"))
    explanation = simulation.overlay.explanation
    assert explanation.kind == kind and explanation.matched == explanation.total
    [finding] = lr009(simulation)
    assert finding.severity.value == "error" and words in finding.message


def test_the_resume_explanation_finds_the_new_total(tmp_path, simulate_config):
    simulation = overlay_of(simulate_config, lr_loops.resumed_loop(tmp_path / "state.json"))
    assert "15 total steps (simulated 10)" in simulation.overlay.explanation.message


def test_skipped_steps_are_counted(tmp_path, simulate_config):
    simulation = overlay_of(simulate_config, lr_loops.skipped_fp16_loop(tmp_path / "state.json"))
    assert f"lags the simulation by {len(lr_loops.POISONED_STEPS)} steps" in simulation.overlay.explanation.message


def test_stepping_once_per_process_on_two_real_processes(tmp_path, simulate_config):
    pytest.importorskip("accelerate")
    state = lr_loops.per_process_loop(tmp_path / "state.json")
    simulation = overlay_of(simulate_config, state, lr_loops.PER_PROCESS_CONFIG, lr_loops.PER_PROCESS_WORLD_SIZE)
    explanation = simulation.overlay.explanation
    assert explanation.kind == "per-process" and explanation.matched == explanation.total
    assert "world size 2" in explanation.message


@pytest.mark.parametrize("name", sorted(set(lr_loops.LOOPS) - {"per_process"}))
def test_the_fixture_logs_are_what_the_loops_write(tmp_path, name):
    fresh = json.loads(lr_loops.LOOPS[name](tmp_path / "state.json").read_text())
    stored = json.loads((lr_loops.FIXTURES / f"{name}.json").read_text())
    assert [(e["step"], e["learning_rate"]) for e in fresh["log_history"]] == [
        (e["step"], e["learning_rate"]) for e in stored["log_history"]
    ]


def test_an_unreadable_trainer_state_is_an_input_error(tmp_path, simulate_config):
    from mldebug_cli.core.errors import InputError

    bad = tmp_path / "state.json"
    bad.write_text(json.dumps({"log_history": [{"step": 1, "loss": 2.0}]}))
    with pytest.raises(InputError, match="no learning_rate"):
        overlay_of(simulate_config, bad)


def test_the_resume_is_refitted_without_max_steps_in_the_state(tmp_path, simulate_config):
    state = lr_loops.resumed_loop(tmp_path / "state.json")
    stripped = json.loads(state.read_text())
    del stripped["max_steps"]
    state.write_text(json.dumps(stripped))
    explanation = overlay_of(simulate_config, state).overlay.explanation
    assert explanation.kind == "resumed" and "15 total steps" in explanation.message
