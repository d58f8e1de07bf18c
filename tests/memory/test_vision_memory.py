"""``memory`` on a vision-language config: the image rows' lengths and image tokens read as inspect-data reads them,
the tower's parameters in the weights, its gradients and optimizer states as the framework's freeze flags decide
(held to torch's own requires_grad count after LLaMA-Factory's freezing), its activations for the peak batch."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from vision_models import tiny_config

from mldebug_cli.memory.estimate import vision_activation_term
from mldebug_cli.memory.shapes import read_model_shape
from mldebug_cli.pipelines.memory import MemoryOptions, build_report
from mldebug_cli.pipelines.preflight import memory_lengths

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "fixtures/preflight/llama-factory-vision/config.yaml"


def _setup(tmp_path: Path, **keys) -> tuple[Path, Path]:
    """The bundled LLaMA-Factory Qwen2-VL config beside its data, with ``keys`` changed, and a tiny Qwen2-VL model
    folder (the fixture processor and a random tiny config.json)."""
    shutil.copytree(ROOT / "fixtures/datasets/vision", tmp_path / "datasets/vision")
    model = tmp_path / "model"
    shutil.copytree(ROOT / "fixtures/processors/qwen2-vl", model)
    config = tiny_config("qwen2_vl", 2, width=64, heads=4, text_hidden=64)
    config["vision_config"].update(in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2)
    config["text_config"]["vocab_size"] = 151936
    (model / "config.json").write_text(json.dumps(config))
    text = CONFIG.read_text().replace("../../processors/qwen2-vl", "model").replace("../../datasets/vision",
                                                                                    "datasets/vision")
    lines = [line for line in text.splitlines() if line.split(":")[0] not in keys]
    lines += [f"{k}: {json.dumps(v)}" for k, v in keys.items()]
    path = tmp_path / "config.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path, model


def _report(path: Path, model: Path):
    options = MemoryOptions(config=str(path), model=str(model), gpu_memory=80.0, allow_outside_paths=True)
    return build_report(options, read_lengths=memory_lengths)


def _terms(report) -> dict[str, int]:
    return {t["name"]: t["bytes"] for t in report.details["terms"]}


def _torch_trainable(model: Path, frozen: tuple[str, ...]) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    with torch.device("meta"):
        built = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.from_pretrained(model))
    return sum(p.numel() for n, p in built.named_parameters() if not any(f"visual.{k}" in n for k in frozen))


@pytest.mark.slow
def test_llama_factory_full_tuning_freezes_the_tower_and_projector_by_default(tmp_path):
    path, model = _setup(tmp_path, finetuning_type="full")
    report = _report(path, model)
    terms = _terms(report)
    shape = read_model_shape(model)
    assert shape.vision is not None
    # LLaMA-Factory's get_forbidden_modules: visual.patch_embed, visual.blocks and visual.merger frozen
    trainable = _torch_trainable(model, ("patch_embed", "blocks", "merger"))
    assert terms["gradients"] == trainable * 2  # bf16: gradients in the weights' dtype
    assert terms["weights"] == (shape.parameters + shape.vision.parameters) * 2
    assert terms["vision activations"] == 0
    assert "images expanded by the processor" in report.context["lengths"]


@pytest.mark.slow
def test_unfrozen_tower_trains_and_saves_its_activations_for_the_peak_batch(tmp_path):
    path, model = _setup(tmp_path, finetuning_type="full", freeze_vision_tower=False,
                         freeze_multi_modal_projector=False, disable_gradient_checkpointing=True)
    report = _report(path, model)
    terms = _terms(report)
    assert terms["gradients"] == _torch_trainable(model, ()) * 2
    batch = report.details["batch"]
    lengths = memory_lengths(MemoryOptions(config=str(path), model=str(model), allow_outside_paths=True))
    images = tuple(t for row in batch["rows"] for t in lengths.images.get(row, ()))
    assert images, "the peak batch holds an image"
    shape = read_model_shape(model)
    from mldebug_cli.memory.batches import MicroBatch
    from mldebug_cli.memory.setup import MemorySetup

    setup = MemorySetup("llama-factory", "sft", 1, attention="sdpa")
    expected = vision_activation_term(shape, setup, MicroBatch(1, 1, 1, 1, images=images)).bytes
    assert terms["vision activations"] == expected > 0


@pytest.mark.slow
def test_lora_on_an_unfrozen_tower_counts_its_adapters_as_trained(tmp_path):
    """LLaMA-Factory LoRA (``lora_target: all``) with the tower unfrozen: the adapters on the tower's linears are
    trained parameters (their gradients and Adam's two states), as many as peft makes requires_grad on the tiny model
    with the modules LLaMA-Factory 0.9.5 targets (find_all_linear_modules: every Linear's last name but the projector
    and lm_head; patch_target_modules: the full names holding one, less the projector and Qwen2-VL's lora_conflict_keys
    ``patch_embed``, whose Conv3d peft would adapt too)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    peft = pytest.importorskip("peft")
    path, model = _setup(tmp_path, finetuning_type="lora", lora_target="all", lora_rank=8, freeze_vision_tower=False)
    terms = _terms(_report(path, model))
    built = transformers.AutoModelForImageTextToText.from_config(transformers.AutoConfig.from_pretrained(model))
    forbidden = ("visual.merger", "lm_head")
    names = {n.split(".")[-1] for n, m in built.named_modules()
             if isinstance(m, torch.nn.Linear) and not any(f in n for f in forbidden)}
    targets = [n for n, _ in built.named_modules() if any(t in n for t in names)
               and not any(f in n for f in (*forbidden, "patch_embed"))]
    wrapped = peft.get_peft_model(built, peft.LoraConfig(r=8, target_modules=targets))
    trained = sum(p.numel() for p in wrapped.parameters() if p.requires_grad)
    tower = sum(p.numel() for n, p in wrapped.named_parameters() if p.requires_grad and ".visual." in n)
    assert tower > 0  # the tower's adapters are among them
    # LLaMA-Factory keeps trainable adapters in fp32: 4 B of gradient and 2 × 4 B of Adam state each
    assert (terms["adapters"], terms["gradients"], terms["optimizer states"]) == (trained * 4, trained * 4,
                                                                                 trained * 8)
