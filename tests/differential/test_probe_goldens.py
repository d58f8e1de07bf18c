"""`mldebug probe` against the real TRL trainer: the stored goldens of tools/probe_goldens.py (generated configs on
tiny random models of seven architectures; TRL's compute_loss + backward) replayed through mldebug's probe. The
loss and every trainable tensor's gradient norm agree (relative 1e-4), and GP002/GP008 fire exactly where the
trainer's own gradients say they should (bf16 configs at bf16's resolution, 2^-7: tools/probe_goldens.py says why).
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
    out = subprocess.run([sys.executable, "-c", script, str(ROOT / "tools" / "probe_goldens.py"), str(len(RECORDS))],
                         capture_output=True, text=True, check=True, timeout=600).stdout
    drawn = json.loads(out)
    assert [{k: r[k] for k in drawn[0]} for r in RECORDS] == drawn
    assert all("refused" in r or (r["grads"] and "loss" in r) for r in RECORDS)


def test_the_goldens_record_the_versions_that_made_them():
    versions = goldens.load()["versions"]
    assert versions["trl"] == "1.16.0" and {"torch", "transformers", "peft", "datasets", "accelerate"} <= set(versions)


# LoRA/DoRA in bf16: probe's LoRA A matrices take peft's random init from whatever the process's torch RNG holds
# (not seeded before get_peft_model), so B's first-step gradient depends on the tests run before: these agreed in one
# pytest run and not in the tool's replay. Not strict until probe seeds as the trainer does (docs/probe-truth.md).
_UNSEEDED_LORA = "bf16 DPO with LoRA/DoRA: probe's LoRA A init follows the process's RNG state (not seeded)"
_GEMMA2_BF16 = "bf16 SFT on Gemma 2 (logit softcapping): embed_tokens' norm differs ~0.9%, past bf16's 2^-7"
KNOWN_DISAGREEMENTS = {  # stored config id -> (why probe and the trainer differ there, strict)
    10: (_UNSEEDED_LORA + " (DoRA, 4 of 12 norms, up to ~5x in the tool's replay)", False),
    15: (_UNSEEDED_LORA + " (DoRA, 4 of 12 norms, up to ~2.4x in the tool's replay)", False),
    34: (_GEMMA2_BF16, True),
    35: (_GEMMA2_BF16, True),
    37: (_GEMMA2_BF16, True),
    55: (_UNSEEDED_LORA + " (LoRA, 13 of 28 norms, up to 1.5x in the tool's replay; agreed under pytest)", False),
}


def _cases(records: list[dict]) -> list:
    return [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_DISAGREEMENTS[r["id"]][0],
                                                    strict=KNOWN_DISAGREEMENTS[r["id"]][1]))
            if r["id"] in KNOWN_DISAGREEMENTS else r for r in records]


@pytest.mark.replay
@pytest.mark.parametrize("record", _cases(RECORDS), ids=lambda r: f"{r['id']}-{r['task']}-{r['adapter']}-{r['arch']}")
def test_probe_agrees_with_the_trainer(record, tiny_models, tmp_path):
    assert goldens.replay_one(record, tmp_path, tiny_models[record["arch"]]) == []
