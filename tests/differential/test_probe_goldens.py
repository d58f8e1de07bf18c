"""`mldebug probe` against the real TRL trainer: the stored goldens of tools/probe_goldens.py (generated configs on
tiny random models of seven architectures; TRL's compute_loss + backward) replayed through mldebug's probe. The
loss and every trainable tensor's gradient norm agree (relative 1e-4), and GP002/GP008 fire exactly where the
trainer's own gradients say they should. A sample runs by default (one config per trainer path); all of them are
marked slow."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from support import ROOT

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("trl")

spec = importlib.util.spec_from_file_location("probe_goldens", ROOT / "tools" / "probe_goldens.py")
goldens = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = goldens  # its dataclasses look their module up
spec.loader.exec_module(goldens)

RECORDS = goldens.load()["cases"] if goldens.GOLDEN.is_file() else []
pytestmark = pytest.mark.skipif(not RECORDS, reason=f"no stored goldens at {goldens.GOLDEN}: "
                                "run `python tools/probe_goldens.py make`")


def _sample(records: list[dict]) -> list[dict]:
    """The first config of each (trainer path, adapter) pair."""
    seen: dict[tuple[str, str], dict] = {}
    for record in records:
        seen.setdefault((record["task"], record["adapter"]), record)
    return list(seen.values())


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    return goldens.models(tmp_path_factory.mktemp("probe-golden-models"))


def test_the_stored_configs_are_the_generated_ones_and_every_trainer_ran_or_refused():
    drawn = goldens.draw_cases(len(RECORDS))
    assert [{k: r[k] for k in drawn[0]} for r in RECORDS] == drawn  # the tool's own draw, in order
    assert all("refused" in r or (r["grads"] and "loss" in r) for r in RECORDS)


@pytest.mark.parametrize("record", _sample(RECORDS), ids=lambda r: f"{r['id']}-{r['task']}-{r['adapter']}-{r['arch']}")
def test_probe_agrees_with_the_trainer_on_a_sample(record, tiny_models, tmp_path):
    assert goldens.replay_one(record, tmp_path, tiny_models[record["arch"]]) == []


@pytest.mark.slow
@pytest.mark.parametrize("record", RECORDS, ids=lambda r: f"{r['id']}-{r['task']}-{r['adapter']}-{r['arch']}")
def test_probe_agrees_with_the_trainer_on_every_stored_config(record, tiny_models, tmp_path):
    assert goldens.replay_one(record, tmp_path, tiny_models[record["arch"]]) == []
