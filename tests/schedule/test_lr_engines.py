"""The built-in formulas agree with the real schedulers (transformers get_scheduler, torch OneCycleLR)
on every scheduler type and edge case, and the step arithmetic with accelerate's dataloader sharding."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mldebug_cli.frameworks.axolotl.schedulers import SCHEDULERS as AXOLOTL_FAMILY
from mldebug_cli.frameworks.hf.schedulers import (
    EXACT_RELEASES,
    HF_ACCEPTED_KWARGS,
    HF_METRIC_DRIVEN,
    HF_SCHEDULER_TYPES,
)
from mldebug_cli.frameworks.hf.schedulers import SCHEDULERS as HF_FAMILY
from mldebug_cli.schedule.arithmetic import hf_dataloader_length
from mldebug_cli.schedule.engine import BUILTIN_ENGINE, REAL_ENGINE, simulate_lrs
from mldebug_cli.schedule.model import SchedulerChoice

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

BASE_LR = 3e-4
REQUIRE_KWARGS = ("cosine_with_min_lr", "cosine_warmup_with_min_lr", "warmup_stable_decay")
KWARG_VARIANTS = {
    "linear": [{}],
    "cosine": [{}, {"num_cycles": 1.5}],
    "cosine_with_restarts": [{}, {"num_cycles": 3}],
    "polynomial": [{}, {"power": 2.0, "lr_end": 1e-6}, {"power": 0.5}],
    "constant": [{}],
    "constant_with_warmup": [{}],
    "inverse_sqrt": [{}, {"timescale": 7}],
    "reduce_lr_on_plateau": [{}, {"factor": 0.5}],
    "cosine_with_min_lr": [{"min_lr": 1e-5}, {"min_lr_rate": 0.1, "num_cycles": 0.25}],
    "cosine_warmup_with_min_lr": [{"min_lr_rate": 0.1}, {"min_lr": 3e-5, "warmup_lr_rate": 0.2}],
    "warmup_stable_decay": [
        {"num_decay_steps": 3},
        {"num_decay_steps": 4, "warmup_type": "cosine", "decay_type": "1-sqrt", "min_lr_ratio": 0.1},
        {"num_decay_steps": 2, "warmup_type": "1-sqrt", "decay_type": "linear", "num_stable_steps": 3},
        {"num_decay_steps": 20},
    ],
    "greedy": [{}],
}
# (warmup, total): none, short, all of training, longer than training, a single step
STEP_CASES = [(0, 10), (3, 10), (10, 10), (15, 10), (0, 1), (1, 1), (2, 37)]
CASES = [(name, kwargs, w, t) for name, variants in KWARG_VARIANTS.items() for kwargs in variants for w, t in STEP_CASES]


def both_engines(choice: SchedulerChoice, warmup: int, total: int, count: int | None = None):
    count = total if count is None else count
    real = simulate_lrs(choice, BASE_LR, warmup, total, count, engine=REAL_ENGINE)
    builtin = simulate_lrs(choice, BASE_LR, warmup, total, count, engine="builtin")
    return real, builtin


def test_the_builtin_list_is_transformers_scheduler_type():
    from transformers.trainer_utils import SchedulerType

    assert tuple(t.value for t in SchedulerType) == HF_SCHEDULER_TYPES
    assert set(KWARG_VARIANTS) == set(HF_SCHEDULER_TYPES)


@pytest.mark.parametrize("name,kwargs,warmup,total", CASES)
def test_builtin_formulas_equal_get_scheduler(name, kwargs, warmup, total):
    real, builtin = both_engines(SchedulerChoice(name, HF_FAMILY, kwargs), warmup, total)
    assert real.engine == f"transformers {transformers.__version__}" and builtin.engine == BUILTIN_ENGINE
    assert (real.error is None) == (builtin.error is None), (real.error, builtin.error)
    assert real.fails_after == builtin.fails_after
    assert builtin.lrs == real.lrs


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("linear", {"num_cycles": 1}),
        ("cosine", {"min_lr": 1e-6}),
        ("cosine_with_restarts", {"power": 2}),
        ("polynomial", {"lr_end": 1.0}),
        ("inverse_sqrt", {"num_cycles": 2}),
        ("cosine_with_min_lr", {}),
        ("cosine_with_min_lr", {"min_lr": 1e-6, "min_lr_rate": 0.1}),
        ("cosine_warmup_with_min_lr", {"num_decay_steps": 2, "min_lr_rate": 0.1}),
        ("warmup_stable_decay", {}),
        ("warmup_stable_decay", {"num_decay_steps": 2, "decay_type": "exp"}),
        ("warmup_stable_decay", {"num_decay_steps": 2, "num_training_steps": 10}),
    ],
)
def test_both_engines_refuse_what_the_constructor_refuses(name, kwargs):
    real, builtin = both_engines(SchedulerChoice(name, HF_FAMILY, kwargs), 2, 10)
    assert real.error is not None and builtin.error is not None
    assert real.lrs == builtin.lrs == ()


@pytest.mark.parametrize(
    "kwargs,warmup,total",
    [({}, 3, 20), ({}, 0, 20), ({"anneal_strategy": "linear"}, 5, 17), ({"three_phase": True}, 4, 30),
     ({"pct_start": 0.5, "div_factor": 10.0, "final_div_factor": 100.0}, 0, 9), ({}, 1, 1)],
)
def test_one_cycle_formula_equals_torch(kwargs, warmup, total):
    real, builtin = both_engines(SchedulerChoice("one_cycle", AXOLOTL_FAMILY, kwargs), warmup, total)
    assert real.engine.startswith("torch ")
    assert (real.error, real.fails_after is None) == (builtin.error, builtin.fails_after is None)
    assert builtin.lrs == pytest.approx(real.lrs, rel=1e-12, abs=1e-18)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from([n for n in HF_SCHEDULER_TYPES if n not in REQUIRE_KWARGS]),
    warmup=st.integers(0, 40),
    total=st.integers(1, 60),
)
def test_random_step_counts_agree(name, warmup, total):
    real, builtin = both_engines(SchedulerChoice(name, HF_FAMILY, {}), warmup, total)
    assert builtin.lrs == real.lrs


# messy kwargs: numbers of either type, zero and negative ones, names that are not shapes, strings and booleans
_NUMBERS = st.one_of(st.integers(-3, 12), st.floats(-2.0, 12.0, allow_nan=False), st.sampled_from([0, 0.0, 1e-9, 1e-7]))
_VALUES = st.one_of(_NUMBERS, st.sampled_from(["linear", "cosine", "1-sqrt", "exp", "0.5", True, None]))


@settings(max_examples=100, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(HF_SCHEDULER_TYPES),
    warmup=st.integers(0, 40),
    total=st.integers(1, 60),
    base_lr=st.sampled_from([BASE_LR, 1e-5, 2e-4, 1.0]),
)
def test_auto_gives_the_real_schedulers_lrs_without_torch_where_it_may(data, name, warmup, total, base_lr):
    """lr-plot's and preflight's default engine (auto) computes with the built-in formula, under transformers' name,
    where hf.schedulers._exact says the two agree (a recorded release, numeric kwargs): on any kwargs it gives the
    real get_scheduler's LRs and error, float for float, or runs the real one."""
    accepted = sorted(HF_ACCEPTED_KWARGS.get(name, frozenset({"num_cycles"})))
    kwargs = data.draw(st.dictionaries(st.sampled_from(accepted), _VALUES, max_size=len(accepted)) if accepted
                       else st.just({}))
    choice = SchedulerChoice(name, HF_FAMILY, kwargs)
    auto = simulate_lrs(choice, base_lr, warmup, total, total + 2)
    real = simulate_lrs(choice, base_lr, warmup, total, total + 2, engine=REAL_ENGINE)
    assert (auto.lrs, auto.engine, auto.error, auto.fails_after) == (real.lrs, real.engine, real.error, real.fails_after)


def test_auto_takes_the_formula_at_recorded_releases_only():
    """The torch-free path is taken (the same name, but torch is not needed) exactly at the recorded releases."""
    choice = SchedulerChoice("cosine", HF_FAMILY, {"num_cycles": 0.5})
    exact = HF_FAMILY.exact(choice)
    assert (exact is not None) == (transformers.__version__ in EXACT_RELEASES)
    assert HF_FAMILY.exact(SchedulerChoice("cosine", HF_FAMILY, {"num_cycles": "0.5"})) is None
    assert HF_FAMILY.exact(SchedulerChoice(sorted(HF_METRIC_DRIVEN)[0], HF_FAMILY, {"factor": 0.5})) is None


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(0, 70), batch=st.integers(1, 9), processes=st.integers(1, 8), drop_last=st.booleans())
def test_dataloader_length_equals_accelerate_sharding(rows, batch, processes, drop_last):
    pytest.importorskip("accelerate")
    from accelerate.data_loader import BatchSamplerShard
    from torch.utils.data import BatchSampler, SequentialSampler

    sampler = BatchSampler(SequentialSampler(range(rows)), batch, drop_last)
    real = len(BatchSamplerShard(sampler, processes, 0)) if processes > 1 else len(sampler)
    assert hf_dataloader_length(rows, batch, processes, drop_last) == real


def test_polynomial_with_warmup_equal_to_training_fails_after_the_last_step():
    real, builtin = both_engines(SchedulerChoice("polynomial", HF_FAMILY, {}), 10, 10)
    assert real.fails_after == builtin.fails_after == 10
    assert "ZeroDivisionError" in real.error and "ZeroDivisionError" in builtin.error
    assert builtin.lrs == real.lrs and len(real.lrs) == 10


def test_a_long_schedule_stays_exact():
    choice = SchedulerChoice("cosine", HF_FAMILY, {})
    real, builtin = both_engines(choice, 500, 20_000)
    assert builtin.lrs == real.lrs and math.isclose(max(real.lrs), BASE_LR)


@pytest.mark.parametrize("timescale, warmup", [(1.46, 3), (1.46, 7), (0.3, 5)])
def test_inverse_sqrt_with_a_float_timescale_rounds_as_transformers_does(timescale, warmup):
    """transformers shifts the step by (timescale - warmup) first: (step + timescale) - warmup is 1 ULP off at some
    steps (hypothesis found timescale 1.46)."""
    choice = SchedulerChoice("inverse_sqrt", HF_FAMILY, {"timescale": timescale})
    auto = simulate_lrs(choice, 1.0, warmup, 40, 42)
    real = simulate_lrs(choice, 1.0, warmup, 40, 42, engine=REAL_ENGINE)
    assert auto.lrs == real.lrs
