"""The probe's KTO and GRPO losses equal TRL 1.16's own: KTOTrainer.compute_loss and GRPOTrainer.compute_loss on
the same rows, batch and weights (tiny random Qwen2 models made here, CPU; the trainers are the real ones)."""

from __future__ import annotations

import importlib.util
import json
import math

import pytest

from support import ROOT

pytest.importorskip("torch")
pytest.importorskip("peft")
trl = pytest.importorskip("trl")


def _maker():
    spec = importlib.util.spec_from_file_location("make_probe_cases", ROOT / "tools" / "make_probe_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def maker():
    return _maker()


@pytest.fixture(scope="module")
def models(maker, tmp_path_factory):
    """A base model and a second random model of the same shape standing for a trained policy."""
    out = tmp_path_factory.mktemp("trl-losses")
    return maker.tiny_model(out / "base"), maker.tiny_model(out / "policy", seed=1)


def _probe(config, model, **options):
    from mldebug_cli.pipelines.probe import ProbeOptions, build_report

    report = build_report(ProbeOptions(config=str(config), model=str(model), allow_outside_paths=True, **options))
    return {t["name"]: t for t in report.details["probe"]["terms"]}, report


@pytest.mark.replay(keep=1)  # each case runs KTOTrainer and the probe (14-21 CPU s): the first in the fast tier
@pytest.mark.parametrize("settings", [
    {"beta": 0.1},
    {"beta": 0.3, "desirable_weight": 1.5, "undesirable_weight": 0.5},
    {"beta": 0.2, "loss_type": "apo_zero_unpaired"},
])
def test_kto_loss_equals_ktotrainer_on_the_same_batch(maker, models, tmp_path, settings):
    import yaml

    base, policy = models
    config = {**maker.KTO, **settings}
    rows = maker.kto_rows(unsure=True)
    trainer = maker.train_kto(base, rows, config, steps=0, out=tmp_path / "unused", work=tmp_path / "run", policy=policy)
    batch = next(iter(trainer.get_train_dataloader()))  # sequential: rows 0-3 with their KL completions
    expected = float(trainer.compute_loss(trainer.model, batch).detach())
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "model_name_or_path": str(base), "dataset_name": "rows.json", "output_dir": "out",
        "per_device_train_batch_size": 4, "desirable_weight": 1.0, "undesirable_weight": 1.0, "bf16": False,
        **config}))
    terms, _ = _probe(tmp_path / "config.yaml", base, checkpoint=str(policy), rows=(0, 1, 2, 3))
    assert not math.isclose(expected, 0.5 * config.get("desirable_weight", 1.0), rel_tol=1e-3)  # policy ≠ reference
    assert terms["kto"]["losses"] == pytest.approx([expected], rel=1e-4, abs=1e-6)


GRPO_SETTINGS = {**{"beta": 0.2, "temperature": 0.7, "use_peft": True, "lora_r": 8, "lora_alpha": 16,
                    "lora_dropout": 0.0, "lora_target_modules": ["q_proj", "v_proj"]}}


@pytest.fixture(scope="module")
def grpo_run(maker, models, tmp_path_factory):
    """A LoRA GRPO run trained 2 steps by GRPOTrainer on the rewards file's completions (one prompt's rewards all
    equal), so that the policy has left the reference and the KL term is not 0."""
    base, _ = models
    out = tmp_path_factory.mktemp("grpo-run")
    config = {**maker.GRPO, **GRPO_SETTINGS, "learning_rate": 5.0e-3}
    groups = maker.reward_groups(equal=1)
    trainer = maker.train_grpo(base, groups, config, steps=2, out=out / "adapter", work=out / "run")
    (out / "rewards.jsonl").write_text("".join(json.dumps(g) + "\n" for g in groups))
    return trainer, out, config, groups


# each case runs the probe beside GRPOTrainer (24 CPU s), after a GRPO run trained once (30 CPU s): the slow tier; the
# fast tier replays a GRPO golden of GRPOTrainer through the probe (tests/differential/test_probe_goldens.py FAST_CASE)
@pytest.mark.slow
@pytest.mark.parametrize("loss_type", ["dapo", "grpo", "dr_grpo", "bnpo"])
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_grpo_loss_equals_grpotrainer_on_the_same_completions(grpo_run, models, loss_type, scale):
    import torch
    import yaml

    from mldebug_cli.probe.losses import grpo_advantages

    trainer, out, config, groups = grpo_run
    base, _ = models
    trainer.loss_type, trainer.scale_rewards = loss_type, scale  # the settings GRPOConfig hands the trainer
    trainer.model.train()
    torch.manual_seed(0)
    inputs = trainer._generate_and_score_completions(next(iter(trainer.get_train_dataloader())))
    expected = float(trainer.compute_loss(trainer.model, inputs).detach())
    flat = sorted(a for group in grpo_advantages([g["rewards"] for g in groups], scale) for a in group)
    assert flat == pytest.approx(sorted(inputs["advantages"].tolist()), abs=1e-5)
    folder = out / f"{loss_type}-{scale}"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump({
        "model_name_or_path": str(base), "dataset_name": "rows.json", "output_dir": "out",
        **{k: v for k, v in config.items() if k != "learning_rate"}, "loss_type": loss_type, "scale_rewards": scale,
        "bf16": False}))  # as the trainer ran (TRL's default is bf16)
    terms, report = _probe(folder / "config.yaml", base, adapter=str(out / "adapter"), rewards=str(out / "rewards.jsonl"))
    total = terms["grpo-policy"]["losses"][0] + config["beta"] * terms["kl"]["losses"][0]
    assert terms["kl"]["losses"][0] > 1e-6  # the trained policy has left the reference
    assert total == pytest.approx(expected, rel=1e-4, abs=1e-7)
