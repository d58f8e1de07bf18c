"""`mldebug probe` against the real TRL trainer: the stored goldens of tools/probe_goldens.py (generated configs on
tiny random models of seven architectures; TRL's compute_loss + backward, GRPO on the trainer's own generations)
replayed through mldebug's probe. The loss and every trainable tensor's gradient norm agree (relative 1e-4, bf16
included: probe runs TRL's own fused LM head), and GP002/GP008 fire exactly where the trainer's own gradients say
they should.
Four evenly spaced configs replay in the fast tier, the others in the slow one (tests/tiers.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
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


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    return goldens.models(tmp_path_factory.mktemp("probe-golden-models"))


@pytest.mark.slow
def test_the_stored_configs_are_the_generated_ones_and_every_trainer_ran_or_refused():
    # the tool's own draw, in order, made in a fresh process as the tool makes it (in a test worker that has run other
    # hypothesis tests the derandomised draw was seen to differ from the 7th case on)
    script = ("import importlib.util, json, sys; s = importlib.util.spec_from_file_location('probe_goldens', sys.argv[1]); "
              "m = importlib.util.module_from_spec(s); sys.modules['probe_goldens'] = m; s.loader.exec_module(m); "
              "print(json.dumps(m.draw_cases(int(sys.argv[2]))))")
    out = subprocess.run([sys.executable, "-c", script, str(ROOT / "tools" / "probe_goldens.py"),
                          str(max(r["id"] for r in RECORDS) + 1)],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    drawn = json.loads(out)  # a record's id is its index in the draw (shards cut short leave gaps)
    assert [{k: r[k] for k in drawn[r["id"]]} for r in RECORDS] == [drawn[r["id"]] for r in RECORDS]
    assert all("refused" in r or (r["grads"] and "loss" in r) for r in RECORDS)


def test_the_goldens_cover_every_trainer_path_and_five_architectures():
    assert {r["task"] for r in RECORDS} == {"sft", "dpo", "orpo", "kto", "grpo"}
    assert len({r["arch"] for r in RECORDS}) >= 5
    grpo = [r for r in RECORDS if r["task"] == "grpo" and "refused" not in r]
    assert grpo and all(len(line["completions"]) == r["config"]["num_generations"] == len(line["rewards"])
                        for r in grpo for line in r["rollouts"])


def test_the_goldens_record_the_versions_that_made_them():
    versions = goldens.load()["versions"]
    assert versions["trl"] == "1.16.0" and {"torch", "transformers", "peft", "datasets", "accelerate"} <= set(versions)


KNOWN_DISAGREEMENTS: dict[int, tuple[str, bool]] = {  # stored config id -> (why probe and the trainer differ, strict)
}


def _cases(records: list[dict]) -> list:
    return [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_DISAGREEMENTS[r["id"]][0],
                                                    strict=KNOWN_DISAGREEMENTS[r["id"]][1]))
            if r["id"] in KNOWN_DISAGREEMENTS else r for r in records]


@pytest.mark.replay
@pytest.mark.parametrize("record", _cases(RECORDS), ids=lambda r: f"{r['id']}-{r['task']}-{r['adapter']}-{r['arch']}")
def test_probe_agrees_with_the_trainer(record, tiny_models, tmp_path):
    assert goldens.replay_one(record, tmp_path, tiny_models[record["arch"]]) == []
