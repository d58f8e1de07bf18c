"""`mldebug probe` against the real TRL trainer: the stored goldens of tools/probe_goldens.py (generated configs on
tiny random models of seven architectures; TRL's compute_loss + backward) replayed through mldebug's probe. The
loss and every trainable tensor's gradient norm agree (relative 1e-4), and GP002/GP008 fire exactly where the
trainer's own gradients say they should (bf16 configs at bf16's resolution, 2^-7: tools/probe_goldens.py says why).
Four evenly spaced configs replay in the fast tier, the others in the slow one (tests/tiers.py)."""

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


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    return goldens.models(tmp_path_factory.mktemp("probe-golden-models"))


@pytest.mark.slow
def test_the_stored_configs_are_the_generated_ones_and_every_trainer_ran_or_refused():
    drawn = goldens.draw_cases(len(RECORDS))
    assert [{k: r[k] for k in drawn[0]} for r in RECORDS] == drawn  # the tool's own draw, in order
    assert all("refused" in r or (r["grads"] and "loss" in r) for r in RECORDS)


def test_the_goldens_record_the_versions_that_made_them():
    versions = goldens.load()["versions"]
    assert versions["trl"] == "1.16.0" and {"torch", "transformers", "peft", "datasets", "accelerate"} <= set(versions)


_DPO_BF16 = ("bf16 DPO at step 0: policy = reference, the chosen and rejected gradients nearly cancel, so bf16 rounding "
             "(TRL's fp32-accumulating log-prob kernel against autocast's bf16 backward) sets the o_proj lora_B norms")
_GEMMA2_BF16 = "bf16 SFT on Gemma 2 (logit softcapping): embed_tokens' norm differs ~0.9%, past bf16's 2^-7"
KNOWN_DISAGREEMENTS = {  # stored config id -> why probe and the trainer differ there (docs/probe-truth.md)
    10: _DPO_BF16 + " (DoRA, 4 of 12 norms, up to ~5x)",
    15: _DPO_BF16 + " (DoRA, 4 of 12 norms, up to ~2.4x)",
    34: _GEMMA2_BF16,
    35: _GEMMA2_BF16,
    37: _GEMMA2_BF16,
    55: _DPO_BF16 + " (LoRA, reentrant checkpointing, 13 of 28 norms, up to 1.5x)",
}


def _cases(records: list[dict]) -> list:
    return [pytest.param(r, marks=pytest.mark.xfail(reason=KNOWN_DISAGREEMENTS[r["id"]], strict=True))
            if r["id"] in KNOWN_DISAGREEMENTS else r for r in records]


@pytest.mark.replay
@pytest.mark.parametrize("record", _cases(RECORDS), ids=lambda r: f"{r['id']}-{r['task']}-{r['adapter']}-{r['arch']}")
def test_probe_agrees_with_the_trainer(record, tiny_models, tmp_path):
    assert goldens.replay_one(record, tmp_path, tiny_models[record["arch"]]) == []
