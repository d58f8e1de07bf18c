"""The TrainerCallback: the real transformers TrainerState and TrainerControl, fed a real run's history step by step."""

from __future__ import annotations

from transformers import TrainerControl, TrainerState

from mldebug_cli.integrations import CheckRunCallback
from support import RUNS


def replay(path, callback):
    """Feed ``log_history`` to the callback one log at a time, as the Trainer does; the step it stopped at."""
    full = TrainerState.load_from_json(str(path))
    state, control = TrainerState(max_steps=full.max_steps, logging_steps=full.logging_steps), TrainerControl()
    for entry in full.log_history:
        state.log_history.append(entry)
        state.global_step = entry["step"]
        callback.on_log(None, state, control, logs=entry)
        if control.should_training_stop:
            return entry["step"]
    return None


def test_stops_a_run_at_the_first_error():
    callback = CheckRunCallback(stop_on="error")
    assert replay(RUNS / "sft-all-labels-masked" / "trainer_state.json", callback) == 2
    assert [f.code for f in callback.findings] == ["RN001"]


def test_a_healthy_run_is_not_stopped():
    callback = CheckRunCallback(stop_on="warning")
    assert replay(RUNS / "sft-healthy" / "trainer_state.json", callback) is None
    assert [f for f in callback.findings if f.severity.value != "info"] == []
