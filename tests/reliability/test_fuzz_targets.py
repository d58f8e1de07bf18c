"""The fuzz entry points CI runs with atheris (fuzz/run.py): every seed, then random bytes, pass through each one."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import ROOT


def _load_targets():
    spec = importlib.util.spec_from_file_location("mldebug_fuzz_targets", ROOT / "fuzz" / "targets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TARGETS


TARGETS = _load_targets()
@pytest.mark.parametrize("name", list(TARGETS))
def test_every_seed_passes_through_its_target(name):
    target, seed_dirs = TARGETS[name]
    seeds = [p for folder in seed_dirs for p in sorted(folder.rglob("*")) if p.is_file() and p.stat().st_size < 2**16]
    assert seeds
    for seed in seeds:
        target(seed.read_bytes())


@pytest.mark.parametrize("name", list(TARGETS))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=512))
def test_random_bytes_pass_through_every_target(name, data):
    TARGETS[name][0](data)
