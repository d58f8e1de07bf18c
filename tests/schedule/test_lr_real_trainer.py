"""The simulated schedule equals, step for step, what the real HF Trainer logs (transformers installed here)."""

from __future__ import annotations

import pytest
from lr_helpers import run_real_trainer

pytest.importorskip("torch")
pytest.importorskip("accelerate")

BASE = {"learning_rate": 1e-3, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 3,
        "num_train_epochs": 2, "warmup_steps": 3}
ROWS = 25  # 13 micro-batches per epoch: windows of 3,3,3,3,1 -- uneven epochs

SCHEDULERS = [
    ("linear", {}),
    ("cosine", {"num_cycles": 0.7}),
    ("cosine_with_restarts", {"num_cycles": 2}),
    ("polynomial", {"power": 2.0, "lr_end": 1e-5}),
    ("constant", {}),
    ("constant_with_warmup", {}),
    ("inverse_sqrt", {}),
    ("reduce_lr_on_plateau", {}),
    ("cosine_with_min_lr", {"min_lr": 1e-4}),
    ("cosine_warmup_with_min_lr", {"min_lr_rate": 0.1}),
    ("warmup_stable_decay", {"num_decay_steps": 4, "decay_type": "linear"}),
    ("greedy", {}),
]

EDGE_CASES = {
    "drop_last": ({**BASE, "dataloader_drop_last": True, "lr_scheduler_type": "cosine"}, 25),
    "max_steps_mid_epoch": ({**BASE, "max_steps": 7, "lr_scheduler_type": "linear"}, 25),
    "max_steps_beyond_epochs": ({**BASE, "num_train_epochs": 1, "max_steps": 12, "lr_scheduler_type": "linear"}, 25),
    "fractional_epochs": ({**BASE, "num_train_epochs": 1.5, "lr_scheduler_type": "cosine"}, 25),
    "accumulation_longer_than_epoch": ({**BASE, "gradient_accumulation_steps": 8, "num_train_epochs": 3,
                                        "warmup_steps": 1, "lr_scheduler_type": "linear"}, 5),
    "warmup_longer_than_training": ({**BASE, "warmup_steps": 20, "lr_scheduler_type": "linear"}, 25),
    "warmup_ratio_rounded_up": ({**BASE, "warmup_steps": 0.25, "lr_scheduler_type": "cosine"}, 25),
    "even_windows": ({**BASE, "gradient_accumulation_steps": 2, "lr_scheduler_type": "polynomial"}, 24),
}


def _assert_same(simulation, logged, max_steps):
    assert simulation.plan.total_steps == max_steps
    assert [p.step for p in simulation.schedule] == [h["step"] for h in logged]
    assert [p.lr for p in simulation.schedule] == [h["learning_rate"] for h in logged]
    assert [p.epoch for p in simulation.schedule] == pytest.approx([h["epoch"] for h in logged], abs=1e-12)


@pytest.mark.replay
@pytest.mark.parametrize("name,kwargs", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_every_scheduler_type_matches_the_trainer(tmp_path, simulate_config, name, kwargs):
    config = {**BASE, "lr_scheduler_type": name, "lr_scheduler_kwargs": kwargs}
    metric_driven = name in ("reduce_lr_on_plateau", "greedy")
    if metric_driven:  # the Trainer requires evaluation for these; no plateau within two epochs
        config["eval_strategy"] = "epoch"
    logged, max_steps = run_real_trainer(tmp_path, config, ROWS, eval_rows=4 if metric_driven else 0)
    _assert_same(simulate_config(config, ROWS), logged, max_steps)


@pytest.mark.replay
@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_step_arithmetic_edge_cases_match_the_trainer(tmp_path, simulate_config, case):
    config, rows = EDGE_CASES[case]
    logged, max_steps = run_real_trainer(tmp_path, config, rows)
    _assert_same(simulate_config(config, rows), logged, max_steps)


def test_builtin_engine_matches_the_trainer_too(tmp_path, simulate_config):
    config = {**BASE, "lr_scheduler_type": "cosine_with_min_lr", "lr_scheduler_kwargs": {"min_lr_rate": 0.2}}
    logged, max_steps = run_real_trainer(tmp_path, config, ROWS)
    simulation = simulate_config(config, ROWS, engine="builtin")
    assert simulation.engine == "built-in formulas"
    _assert_same(simulation, logged, max_steps)


def test_polynomial_with_warmup_equal_to_training_crashes_the_trainer_where_simulated(tmp_path, simulate_config):
    config = {**BASE, "gradient_accumulation_steps": 1, "num_train_epochs": 1, "warmup_steps": 5,
              "lr_scheduler_type": "polynomial"}
    with pytest.raises(ZeroDivisionError):
        run_real_trainer(tmp_path, config, 10)
    simulation = simulate_config(config, 10)
    assert simulation.plan.total_steps == 5 and simulation.scheduler_fails_after == 5
