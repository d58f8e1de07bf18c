"""The vision tower's memory terms against torch on CPU, for random tiny models of each modelled family.

- parameters: transformers' own models built on the meta device: the tower and projector counts equal, and so does
  the language model's (``shape_from_config`` on the text part);
- LoRA ``all-linear``: the adapters peft puts on the vision tower and projector equal ``lora_parameters``;
- activations: the bytes autograd saves for backward in the tower (saved-tensor hooks on ``get_image_features``,
  unique storages, parameters excluded): one layer (a 2-layer minus a 1-layer tower) equal to
  ``layer_bytes_per_patch`` byte for byte, sdpa and eager; the whole tower (layers + ``fixed_bytes``) equal too.
  CPU's LayerNorm saves mean and rstd in the input's dtype (2 × 2 B a row in bf16), CUDA's in fp32 (8 B): the
  tests pass CPU's figure.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from vision_models import tiny_config  # noqa: E402

from mldebug_cli.memory.shapes import shape_from_config  # noqa: E402
from mldebug_cli.memory.vision import vision_shape  # noqa: E402

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "gemma3", "llava", "idefics3")
CPU_STATS = 4  # bf16 mean + rstd per row on CPU
GRID = ((1, 8, 8), (1, 4, 6))  # Qwen: two images of 8 × 8 and 4 × 6 patches (one window each)


def _model(config: dict, attn: str = "sdpa", dtype=None):
    built = transformers.AutoConfig.for_model(**config)
    if dtype is None:
        with torch.device("meta"):
            return transformers.AutoModelForImageTextToText.from_config(built)
    torch.manual_seed(0)
    model = transformers.AutoModelForImageTextToText.from_config(built, dtype=dtype, attn_implementation=attn)
    return model.train()


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_parameters_equal_torch(family):
    for head in (False, True) if family == "gemma3" else (False,):
        config = tiny_config(family, 2, head=head)
        model = _model(config)
        text = sum(p.numel() for n, p in model.named_parameters() if "language_model" in n or "text_model" in n
                   or n.startswith("lm_head"))
        vision = sum(p.numel() for p in model.parameters()) - text
        shape = vision_shape(config, 64)
        assert shape is not None
        assert (shape.parameters, shape_from_config(config).parameters) == (vision, text)
        projector = sum(p.numel() for n, p in model.named_parameters()
                        if any(k in n for k in ("merger", "multi_modal_projector", "connector")))
        assert shape.projector_parameters == projector


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_lora_all_linear_adapts_the_tower_as_peft_does(family):
    peft = pytest.importorskip("peft")
    config = tiny_config(family, 2)
    wrapped = peft.get_peft_model(_model(config), peft.LoraConfig(r=4, target_modules="all-linear"))
    vision = sum(p.numel() for n, p in wrapped.named_parameters()
                 if p.requires_grad and "language_model" not in n and "text_model" not in n)
    shape = vision_shape(config, 64)
    assert shape is not None and shape.lora_parameters(4, tower=True, projector=True) == vision


def _inputs(family: str) -> tuple[dict, int, list[int]]:
    """Pixel inputs of two images, the image tokens the processor would give each, and their count."""
    bf16 = torch.bfloat16
    if family in ("qwen2_vl", "qwen2_5_vl"):
        grid = torch.tensor(GRID)
        n = int(grid.prod(-1).sum())
        return dict(pixel_values=torch.randn(n, 3 * 2 * 14 * 14, dtype=bf16), image_grid_thw=grid), 2, [16, 6]
    if family == "idefics3":  # one row of two tiles of 8 × 8 patches: 16 tokens each after the 2 × 2 shuffle
        return dict(pixel_values=torch.randn(1, 2, 3, 112, 112, dtype=bf16),
                    pixel_attention_mask=torch.ones(1, 2, 112, 112, dtype=torch.bool)), 1, [32]
    return dict(pixel_values=torch.randn(2, 3, 112, 112, dtype=bf16)), 2, [0, 0]


def _saved(family: str, depth: int, attn: str) -> int:
    from torch.autograd.graph import saved_tensors_hooks

    model = _model(tiny_config(family, depth), attn, torch.bfloat16)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    inputs, _, _ = _inputs(family)
    with saved_tensors_hooks(pack, lambda t: t):
        model.model.get_image_features(**inputs)
    return sum(seen.values())


@pytest.mark.slow
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("family", FAMILIES)
def test_tower_activations_equal_saved_tensor_hooks(family, attn):
    shape = vision_shape(tiny_config(family, 1), 64)
    assert shape is not None
    _, images, tokens = _inputs(family)
    patches = sum(shape.patches(t) for t in tokens)
    groups = [g for t in tokens for g in shape.attention_groups(t)]
    eager = attn == "eager"
    layer = shape.layer_bytes_per_patch(2, eager, CPU_STATS) * patches + (
        shape.eager_probability_bytes(groups) if eager else 0)
    one, two = _saved(family, 1, attn), _saved(family, 2, attn)
    assert two - one == layer
    assert one == layer + shape.fixed_bytes(2, images, patches, True, True, CPU_STATS)


def test_an_unreadable_vision_config_is_one_line_naming_the_file():
    from mldebug_cli.core.errors import InputError

    config = tiny_config("qwen2_vl", 2)
    config["vision_config"]["depth"] = "many"
    with pytest.raises(InputError, match=r"m/config.json: vision_config is not a readable vision tower .*depth"):
        shape_from_config(config, "m/config.json")
    text_only = {k: v for k, v in tiny_config("qwen2_vl", 2).items() if k != "vision_config"}
    assert shape_from_config(text_only).vision is None
